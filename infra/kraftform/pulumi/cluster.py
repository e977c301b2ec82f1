"""`KafkaCluster`: the secure KRaft cluster of a stack: its secrets, network and image, and its nodes, which the
Docker runtime's engine runs (`pulumi.nodes`), the very containers `kraftform cluster up --runtime docker`
makes (`cluster.containers.container_specs`).

Certificates, passwords and the cluster id are made once, by a dynamic resource, and kept in the stack
state as secrets: a second `pulumi up` reuses them instead of re-keying the cluster. Every node has its
own named data volume, which a restart with a new setting or image keeps.

`container_resource` makes the stack's other containers (consumers, Spark, monitoring) with pulumi-docker.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast

import pulumi
import pulumi_docker as docker
from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ResourceProvider, UpdateResult

from kraftform.cluster.connection import Connection
from kraftform.cluster.containers import (
    CAP_DROP,
    LABEL_CLUSTER,
    LOG_OPTS,
    SECURITY_OPTS,
    ContainerSpec,
    docker_addressing,
    external_bootstrap,
    in_containers,
    network_name,
)
from kraftform.cluster.identity import is_node_certificate
from kraftform.cluster.render import make_secrets, secrets_from_dict, secrets_to_dict
from kraftform.cluster.spec_json import from_json, to_json
from kraftform.cluster.topology import Topology, topology
from kraftform.pulumi.nodes import ClusterNodes, node_inputs, nodes_props
from kraftform.specset.model import ClusterSpec, ExternalListener, Host, Security
from kraftform.units import go_duration
from kraftform.versions import KAFKA_VERSION

T = TypeVar("T")
#: Kept encrypted in the state. The cluster id is not among them: Kafka hands it to every client in
#: Metadata and DescribeCluster responses, and it stands in every container's format command.
SECRET_OUTPUTS = ["ca_key", "node_keys", "admin_password", "controller_password"]
#: Also in every node's meta.properties or command: the controllers' directory ids and the first voters.
PUBLIC_OUTPUTS = ["cluster_id", "ca_cert", "directory_ids", "initial_voters"]


def _spec_of(props: dict[str, Any]) -> ClusterSpec:
    listener = ExternalListener(True, props.get("external_host") or ExternalListener().host)
    spec = ClusterSpec(props["name"], int(props["brokers"]), KAFKA_VERSION, props["mode"], int(props["controllers"]),
                       security=Security(external_listener=listener))
    if props.get("hosts"):  # where each node listens: its certificate names the address, the voters the ports
        placed = from_json(HostsLayout, json.loads(props["hosts"]))
        spec = dataclasses.replace(spec, racks=placed.racks, hosts=placed.hosts, security=Security(
            external_listener=dataclasses.replace(listener, base_port=placed.base_port)))
    # The release is no part of a cluster's secrets (an upgrade keeps them); a topology needs one.
    return in_containers(spec)


@dataclasses.dataclass(frozen=True)
class HostsLayout:
    """What of the cluster section places its nodes on hosts: the secrets resource's `hosts` input."""

    racks: tuple[str, ...]
    hosts: tuple[Host, ...]
    base_port: int


def hosts_layout(spec: ClusterSpec) -> str:
    """"" for a cluster without hosts, so a stack made before hosts existed sees no change."""
    if not spec.hosts:
        return ""
    layout = HostsLayout(spec.racks, spec.hosts, spec.security.external_listener.base_port)
    return json.dumps(to_json(layout), sort_keys=True)


class ClusterSecretsProvider(ResourceProvider):
    """Makes the CA, node certificates and passwords on create and keeps them for the cluster's life.

    A changed node set is an update: new nodes get keys from the same CA, the rest stays, since the
    metadata log was formatted with these passwords and the data volumes carry this cluster id. A new
    cluster name or mode is another cluster (replaced). Pulumi hands `diff` and `update` the old
    *outputs*, so the inputs compared must come back unchanged among them: the admin password asked for
    is kept as `requested_admin_password`, apart from the `admin_password` in use."""

    INPUTS = ("name", "brokers", "controllers", "mode", "external_host", "requested_admin_password", "hosts")
    IDENTITY = ("name", "mode")

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        key = "requested_admin_password"
        if olds and olds.get(key) != news.get(key):
            return CheckResult(news, [CheckFailure("", (
                "kraftform:adminPassword cannot change once the cluster exists: its SCRAM credential was "
                "written when the cluster was formatted. Set the previous value back, or destroy the stack "
                "for a new cluster"))])
        return CheckResult(news, [])

    def create(self, props: dict[str, Any]) -> CreateResult:
        topo = topology(_spec_of(props))
        made = make_secrets(topo, docker_addressing(topo), props.get("requested_admin_password") or None)
        return CreateResult(props["name"], {**props, **secrets_to_dict(made)})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [k for k in self.INPUTS if (olds.get(k) or "") != (news.get(k) or "")]
        # Node keys from before the node identity are issued again (identity.py): the nodes' update rolls them in.
        legacy = any(not is_node_certificate(key["cert"]) for key in (olds.get("node_keys") or {}).values())
        return DiffResult(changes=bool(changed) or legacy, replaces=[k for k in changed if k in self.IDENTITY])

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        topo = topology(_spec_of(news))
        kept = make_secrets(topo, docker_addressing(topo), keep=secrets_from_dict(olds))
        return UpdateResult({**news, **secrets_to_dict(kept)})


def _read(path: str) -> str:
    """A TLS file of a host's Docker endpoint, read when the program runs (the provider takes its content)."""
    try:
        return Path(path).read_text()
    except OSError as exc:
        raise pulumi.RunError(f"a Docker endpoint's TLS file: {exc}") from None


def secrets_inputs(spec: ClusterSpec, admin_password: pulumi.Input[str] | None) -> dict[str, Any]:
    """The secrets resource's inputs; the outputs it makes are declared too (as None) so they can be read."""
    return {"name": spec.name, "brokers": spec.brokers, "controllers": spec.controllers, "mode": spec.mode,
            "external_host": spec.security.external_listener.host,
            "requested_admin_password": admin_password or "", "hosts": hosts_layout(spec),
            **dict.fromkeys([*PUBLIC_OUTPUTS, *SECRET_OUTPUTS])}


class ClusterSecretsResource(pulumi.dynamic.Resource):
    def __init__(self, name: str, spec: ClusterSpec, admin_password: pulumi.Input[str] | None,
                 opts: pulumi.ResourceOptions) -> None:
        super().__init__(ClusterSecretsProvider(), name, secrets_inputs(spec, admin_password),
                         pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
                             additional_secret_outputs=[*SECRET_OUTPUTS, "requested_admin_password"])))


def _uploads(spec: ContainerSpec) -> list[docker.ContainerUploadArgs]:
    owner = spec.user.split(":", 1)[0]
    return [docker.ContainerUploadArgs(file=f.path, content=f.content, permissions=f"{f.mode:04o}", owner=owner,
                                       group=owner) for f in spec.files]


def _healthcheck(spec: ContainerSpec) -> docker.ContainerHealthcheckArgs | None:
    check = spec.healthcheck
    return None if check is None else docker.ContainerHealthcheckArgs(
        tests=list(check.test), interval=go_duration(check.interval_s), timeout=go_duration(check.timeout_s),
        retries=check.retries, start_period=go_duration(check.start_period_s))


def _labels(labels: Mapping[str, str]) -> list[docker.ContainerLabelArgs]:
    return [docker.ContainerLabelArgs(label=k, value=v) for k, v in labels.items()]


def container_resource(name: str, spec: pulumi.Output[ContainerSpec], image_id: pulumi.Input[str],
                       network: pulumi.Input[str], volume: docker.Volume, parent: pulumi.Resource,
                       wait_timeout: int | None, after: Sequence[pulumi.Resource] = ()) -> docker.Container:
    """A pulumi-docker container made field by field from `spec`, the object the Docker runtime runs. Its
    uploaded files are secret (keys, passwords); the rest stays readable in a preview. `pulumi up` waits until
    Docker reports it healthy (`wait_timeout` seconds; None: no wait, the caller waits its own way). It is made
    after its volume and the resources `after`."""

    def pick(field: Callable[[ContainerSpec], T]) -> pulumi.Output[T]:
        return spec.apply(field)

    return docker.Container(
        name, name=pick(lambda c: c.name), hostname=pick(lambda c: c.hostname), image=image_id,
        command=pick(lambda c: list(c.command)), user=pick(lambda c: c.user),
        # None, not [], without any: a container made before `env` existed shows no change.
        envs=pick(lambda c: [f"{k}={v}" for k, v in c.env.items()] or None),
        uploads=pulumi.Output.secret(cast(Any, pick(_uploads))),  # stubs: Never
        networks_advanced=[docker.ContainerNetworksAdvancedArgs(name=network, aliases=pick(lambda c: list(c.aliases)))],
        volumes=[docker.ContainerVolumeArgs(volume_name=volume.name, container_path=pick(lambda c: c.volume_path))],
        ports=pick(lambda c: [docker.ContainerPortArgs(internal=p.container_port, external=p.host_port, ip=p.host_ip)
                              for p in c.ports]),
        labels=pick(lambda c: _labels(c.labels)), healthcheck=cast(Any, pick(_healthcheck)),
        wait=wait_timeout is not None, wait_timeout=wait_timeout, restart=pick(lambda c: c.restart), must_run=True,
        # The hardening every container kraftform runs gets (`containers.SECURITY_OPTS`), as the runtimes' own.
        security_opts=list(SECURITY_OPTS), capabilities=docker.ContainerCapabilitiesArgs(drops=list(CAP_DROP)),
        log_driver="json-file", log_opts=dict(LOG_OPTS), memory=pick(lambda c: c.memory_bytes // 2**20 or None),
        # No swap above the limit, as the runtimes' containers; left out, Docker reads back twice the memory and
        # every preview showed a change (a real engine's `preview --expect-no-changes` failed on it).
        memory_swap=pick(lambda c: c.memory_bytes // 2**20 or None),
        # The name is fixed, so the old container must go before its replacement starts; the volume, a resource
        # of its own, stays.
        opts=pulumi.ResourceOptions(parent=parent, delete_before_replace=True, depends_on=[volume, *after]))


class KafkaCluster(pulumi.ComponentResource):
    """The cluster's secrets, its network and image (pulumi-docker), and its nodes (`ClusterNodes`, carried out
    by the runtime's engine); outputs the bootstrap servers and the CA."""

    bootstrap_servers: pulumi.Output[str]
    ca_certificate: pulumi.Output[str]
    admin_password: pulumi.Output[str]

    def __init__(self, name: str, spec: ClusterSpec, image: str, admin_password: pulumi.Input[str] | None = None,
                 opts: pulumi.ResourceOptions | None = None, protect: bool = False) -> None:
        super().__init__("kraftform:index:KafkaCluster", name, {"cluster": spec.name, "image": image}, opts)
        # The same cluster the Docker runtime runs from this spec. Declared feature levels stay out of the
        # nodes' format command: formatting only a node without data finalises nothing; the stack's `Features`
        # resource sets them with UpdateFeatures.
        spec = dataclasses.replace(in_containers(spec), features={})
        topo: Topology = topology(spec)
        child = pulumi.ResourceOptions(parent=self)
        self.secrets = ClusterSecretsResource(f"{name}-secrets", spec, admin_password, child)
        keys = [*PUBLIC_OUTPUTS, *SECRET_OUTPUTS]
        made = pulumi.Output.all(*(getattr(self.secrets, k) for k in keys)).apply(
            lambda values: secrets_to_dict(secrets_from_dict(dict(zip(keys, values, strict=True)))))
        # The network's name and the bootstrap servers come from the spec alone, never from the secrets' outputs:
        # those are unknown in a preview while the secrets resource changes (a node added), and a name unknown
        # there is previewed as the network and every container on it replaced.
        #: One Docker provider per host (`cluster.hosts`): the image is looked for on each engine that runs nodes.
        self.providers = {h.name: docker.Provider(f"{name}-{h.name}", host=h.docker,
                                                  ca_material=_read(h.tls.ca) if h.tls else None,
                                                  cert_material=_read(h.tls.cert) if h.tls else None,
                                                  key_material=pulumi.Output.secret(_read(h.tls.key))
                                                  if h.tls else None, opts=child)
                          for h in spec.hosts}
        # keep_locally: a `pulumi destroy` leaves the image (the local one cannot be pulled again).
        images = [docker.RemoteImage(f"{name}-image-{host}", name=image, keep_locally=True,
                                     opts=pulumi.ResourceOptions(parent=self, provider=provider))
                  for host, provider in self.providers.items()]
        needs: list[pulumi.Resource] = list(images)
        if not spec.hosts:  # on hosts every node is on its host's own network
            self.network = docker.Network(f"{name}-network", name=network_name(spec.name),
                                          labels=[docker.NetworkLabelArgs(label=LABEL_CLUSTER, value=spec.name)],
                                          opts=child)
            self.image = docker.RemoteImage(f"{name}-image", name=image, keep_locally=True, opts=child)
            needs = [self.network, self.image]
        self.bootstrap_servers = pulumi.Output.from_input(external_bootstrap(topo))
        self.ca_certificate = self.secrets.ca_cert  # type: ignore[attr-defined]
        self.admin_password = pulumi.Output.secret(self.secrets.admin_password)  # type: ignore[attr-defined]
        security = spec.security
        self.connection: pulumi.Output[dict[str, Any]] = pulumi.Output.all(
            self.bootstrap_servers, self.admin_password, self.ca_certificate).apply(
            lambda v: Connection.scram(v[0], security.admin_user, v[1], security.sasl_mechanism, None).props(
                ca_pem=v[2]))
        nodes = pulumi.Output.unsecret(made.apply(lambda s: node_inputs(spec, secrets_from_dict(s))))
        self.nodes = ClusterNodes(f"{name}-nodes", nodes_props(spec, image, made, nodes, protect=protect),
                                  # Pulumi's own protect too: a renamed cluster or `pulumi destroy` would
                                  # delete this resource, and its volumes with it, without a Check of it.
                                  pulumi.ResourceOptions(parent=self, depends_on=needs, protect=protect))
        #: What waits for every node to be as declared (topics, users, consumers, monitoring).
        self.ready: list[pulumi.Resource] = [self.nodes]
        self.register_outputs({"bootstrap_servers": self.bootstrap_servers, "ca_certificate": self.ca_certificate})
