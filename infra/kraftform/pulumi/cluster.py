"""`KafkaCluster`: the secure KRaft cluster as pulumi-docker resources, built from the very
`ContainerSpec` objects the Docker runtime runs (`cluster.containers.container_specs`), not a copy.

Certificates, passwords and the cluster id are made once, by a dynamic resource, and kept in the stack
state as secrets: a second `pulumi up` reuses them instead of re-keying the cluster. Every node has its
own named data volume, a separate resource, so replacing a container (a new image, a new setting) keeps
the data.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar, cast

import pulumi
import pulumi_docker as docker
from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ResourceProvider, UpdateResult

from kraftform.cluster.connection import Connection
from kraftform.cluster.containers import (
    LABEL_CLUSTER,
    ContainerSpec,
    bootstrap_servers,
    container_specs,
    docker_addressing,
    in_containers,
)
from kraftform.cluster.render import make_secrets, secrets_from_dict, secrets_to_dict
from kraftform.cluster.topology import Node, Topology, topology
from kraftform.pulumi.rolling import Membership, NodeGate, Partitions, revision
from kraftform.specset.model import ClusterSpec, ExternalListener, Security
from kraftform.units import go_duration

T = TypeVar("T")
#: Kept encrypted in the state. The cluster id is not among them: Kafka hands it to every client in
#: Metadata and DescribeCluster responses, and it stands in every container's format command.
SECRET_OUTPUTS = ["ca_key", "node_keys", "admin_password", "controller_password"]
#: Also in every node's meta.properties or command: the controllers' directory ids and the first voters.
PUBLIC_OUTPUTS = ["cluster_id", "ca_cert", "directory_ids", "initial_voters"]


def _spec_of(props: dict[str, Any]) -> ClusterSpec:
    listener = ExternalListener(True, props.get("external_host") or ExternalListener().host)
    return in_containers(ClusterSpec(props["name"], int(props["brokers"]), props["kafka_version"], props["mode"],
                                     int(props["controllers"]), security=Security(external_listener=listener)))


class ClusterSecretsProvider(ResourceProvider):
    """Makes the CA, node certificates and passwords on create and keeps them for the cluster's life.

    A changed node set is an update: new nodes get keys from the same CA, the rest stays, since the
    metadata log was formatted with these passwords and the data volumes carry this cluster id. A new
    cluster name or mode is another cluster (replaced). Pulumi hands `diff` and `update` the old
    *outputs*, so the inputs compared must come back unchanged among them: the admin password asked for
    is kept as `requested_admin_password`, apart from the `admin_password` in use."""

    INPUTS = ("name", "brokers", "controllers", "mode", "kafka_version", "external_host", "requested_admin_password")
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
        changed = [k for k in self.INPUTS if olds.get(k) != news.get(k)]
        return DiffResult(changes=bool(changed), replaces=[k for k in changed if k in self.IDENTITY])

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        topo = topology(_spec_of(news))
        kept = make_secrets(topo, docker_addressing(topo), keep=secrets_from_dict(olds))
        return UpdateResult({**news, **secrets_to_dict(kept)})


def secrets_inputs(spec: ClusterSpec, admin_password: pulumi.Input[str] | None) -> dict[str, Any]:
    """The secrets resource's inputs; the outputs it makes are declared too (as None) so they can be read."""
    return {"name": spec.name, "brokers": spec.brokers, "controllers": spec.controllers, "mode": spec.mode,
            "kafka_version": spec.kafka_version, "external_host": spec.security.external_listener.host,
            "requested_admin_password": admin_password or "",
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
        uploads=pulumi.Output.secret(cast(Any, pick(_uploads))),  # stubs: Never
        networks_advanced=[docker.ContainerNetworksAdvancedArgs(name=network, aliases=pick(lambda c: list(c.aliases)))],
        volumes=[docker.ContainerVolumeArgs(volume_name=volume.name, container_path=pick(lambda c: c.volume_path))],
        ports=pick(lambda c: [docker.ContainerPortArgs(internal=p.container_port, external=p.host_port, ip=p.host_ip)
                              for p in c.ports]),
        labels=pick(lambda c: _labels(c.labels)), healthcheck=cast(Any, pick(_healthcheck)),
        wait=wait_timeout is not None, wait_timeout=wait_timeout, restart=pick(lambda c: c.restart), must_run=True,
        # The name is fixed, so the old container must go before its replacement starts; the volume, a resource
        # of its own, stays.
        opts=pulumi.ResourceOptions(parent=parent, delete_before_replace=True, depends_on=[volume, *after]))


#: The replication throttle while partitions move onto added brokers or off removed ones (the CLI's default).
DEFAULT_THROTTLE = 50 * 1024 * 1024


def roll_order_of(topo: Topology) -> tuple[Node, ...]:
    """Controllers, then brokers, in node id order: the order containers change in. (`kraftform apply` also
    leaves the active controller for last; which one leads is not known when Pulumi plans.)"""
    return tuple(sorted(topo.nodes, key=lambda n: (not n.is_controller, n.node_id)))


class KafkaCluster(pulumi.ComponentResource):
    """Network, one volume and one container per node; outputs the bootstrap servers and the CA."""

    bootstrap_servers: pulumi.Output[str]
    ca_certificate: pulumi.Output[str]
    admin_password: pulumi.Output[str]

    def __init__(self, name: str, spec: ClusterSpec, image: str, admin_password: pulumi.Input[str] | None = None,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("kraftform:index:KafkaCluster", name, {"cluster": spec.name, "image": image}, opts)
        # The same cluster the Docker runtime runs from this spec. Declared feature levels stay out of the
        # containers' format command: a change there would replace every container and, formatting only a node
        # without data, finalise nothing; the stack's `Features` resource sets them with UpdateFeatures.
        spec = dataclasses.replace(in_containers(spec), features={})
        topo: Topology = topology(spec)
        child = pulumi.ResourceOptions(parent=self)
        self.secrets = ClusterSecretsResource(f"{name}-secrets", spec, admin_password, child)
        keys = [*PUBLIC_OUTPUTS, *SECRET_OUTPUTS]
        outputs = pulumi.Output.all(*(getattr(self.secrets, k) for k in keys))
        # Rendered from secrets, so Pulumi would mark every field secret; only the uploaded files are (they hold
        # the keys and passwords, and are made secret below). Names, ports and the command stay readable.
        specs = pulumi.Output.unsecret(outputs.apply(lambda values: container_specs(
            topo, secrets_from_dict(dict(zip(keys, values, strict=True))), image)))
        self.network = docker.Network(f"{name}-network", name=specs.apply(lambda all_specs: all_specs[0].network),
                                      labels=[docker.NetworkLabelArgs(label=LABEL_CLUSTER, value=spec.name)],
                                      opts=child)
        # The container takes the image's ID, not its name: the provider reads the ID back from Docker, so a
        # name would differ from the state on every run and replace every container. keep_locally: a
        # `pulumi destroy` leaves the image (the local one cannot be pulled again).
        self.image = docker.RemoteImage(f"{name}-image", name=image, keep_locally=True, opts=child)
        host = spec.security.external_listener.host
        self.bootstrap_servers = specs.apply(lambda all_specs: bootstrap_servers(all_specs, host))
        self.ca_certificate = self.secrets.ca_cert  # type: ignore[attr-defined]
        self.admin_password = pulumi.Output.secret(self.secrets.admin_password)  # type: ignore[attr-defined]
        security = spec.security
        self.connection: pulumi.Output[dict[str, Any]] = pulumi.Output.all(
            self.bootstrap_servers, self.admin_password, self.ca_certificate).apply(
            lambda v: Connection.scram(v[0], security.admin_user, v[1], security.sasl_mechanism, None).props(
                ca_pem=v[2]))
        self.volumes: list[docker.Volume] = []
        self.containers: list[docker.Container] = []
        #: The last gate of the roll: what waits for every node to be back (topics, users, consumers).
        self.ready: list[pulumi.Resource] = []
        index_of = {n.name: i for i, n in enumerate(topo.nodes)}
        previous: pulumi.Resource | None = None
        for node in roll_order_of(topo):
            one = specs.apply(lambda all_specs, index=index_of[node.name]: all_specs[index])  # type: ignore[misc]
            volume = docker.Volume(f"{name}-{node.name}-data", name=one.apply(lambda c: c.volume), opts=child)
            changed = pulumi.Output.all(one, self.image.image_id).apply(lambda v: revision(v[0], v[1]))
            after: list[pulumi.Resource] = [NodeGate(f"{node.name}-may-stop", "may-stop", node, changed,
                                                     self.connection, pulumi.ResourceOptions(
                                                         parent=self, depends_on=[previous] if previous else []))]
            if not (node.is_broker and node.is_controller):  # a combined node never leaves on its own
                after.append(Membership(f"{node.name}-membership", node, topo.cluster.name, self.connection, child))
            # Created only once healthy, so the topics and users that depend on the containers find a listening
            # cluster.
            container = container_resource(node.name, one, self.image.image_id, self.network.name, volume, self,
                                           wait_timeout=180, after=after)
            previous = NodeGate(f"{node.name}-back", "back", node, container.id, self.connection,
                                pulumi.ResourceOptions(parent=self, depends_on=[container]))
            self.volumes.append(volume)
            self.containers.append(container)
        assert previous is not None
        self.partitions = Partitions(f"{name}-partitions", [n.node_id for n in topo.brokers], DEFAULT_THROTTLE,
                                     self.connection, pulumi.ResourceOptions(parent=self, depends_on=[previous]))
        self.ready = [previous, self.partitions]
        self.register_outputs({"bootstrap_servers": self.bootstrap_servers, "ca_certificate": self.ca_certificate})
