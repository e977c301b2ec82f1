"""`KafkaCluster`: the secure KRaft cluster as pulumi-docker resources, built from the very
`ContainerSpec` objects the Docker runtime runs (`cluster.containers.container_specs`), not a copy.

Certificates, passwords and the cluster id are made once, by a dynamic resource, and kept in the stack
state as secrets: a second `pulumi up` reuses them instead of re-keying the cluster. Every node has its
own named data volume, a separate resource, so replacing a container (a new image, a new setting) keeps
the data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar, cast

import pulumi
import pulumi_docker as docker
from pulumi.dynamic import CreateResult, DiffResult, ResourceProvider

from kraftform.cluster.certificates import KeyPair
from kraftform.cluster.containers import DATA_DIR, ContainerSpec, container_specs, docker_addressing, volume_name
from kraftform.cluster.render import ClusterSecrets, make_secrets
from kraftform.cluster.topology import Topology, topology
from kraftform.spec.model import ClusterSpec

T = TypeVar("T")
SECRET_OUTPUTS = ["cluster_id", "ca_key", "node_keys", "admin_password", "broker_password", "controller_password"]


def secrets_to_outputs(s: ClusterSecrets) -> dict[str, Any]:
    return {"cluster_id": s.cluster_id, "ca_cert": s.ca.cert_pem, "ca_key": s.ca.key_pem,
            "node_keys": {n: {"cert": k.cert_pem, "key": k.key_pem} for n, k in s.node_keys.items()},
            "admin_password": s.admin_password, "broker_password": s.broker_password,
            "controller_password": s.controller_password}


def secrets_from_outputs(o: dict[str, Any]) -> ClusterSecrets:
    return ClusterSecrets(o["cluster_id"], KeyPair(o["ca_cert"], o["ca_key"]),
                          {n: KeyPair(k["cert"], k["key"]) for n, k in o["node_keys"].items()},
                          o["admin_password"], o["broker_password"], o["controller_password"])


def _spec_of(props: dict[str, Any]) -> ClusterSpec:
    return ClusterSpec(props["name"], int(props["brokers"]), props["kafka_version"], props["mode"],
                       int(props["controllers"]))


class ClusterSecretsProvider(ResourceProvider):
    """Makes the CA, node certificates and passwords on create; any change of the node set re-keys."""

    def create(self, props: dict[str, Any]) -> CreateResult:
        topo = topology(_spec_of(props))
        made = make_secrets(topo, docker_addressing(topo), props.get("admin_password") or None)
        return CreateResult(props["name"], {**props, **secrets_to_outputs(made)})

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        keys = ("name", "brokers", "controllers", "mode", "kafka_version", "admin_password")
        changed = [k for k in keys if olds.get(k) != news.get(k)]
        return DiffResult(changes=bool(changed), replaces=changed)


class ClusterSecretsResource(pulumi.dynamic.Resource):
    def __init__(self, name: str, spec: ClusterSpec, admin_password: pulumi.Input[str] | None,
                 opts: pulumi.ResourceOptions) -> None:
        props = {"name": spec.name, "brokers": spec.brokers, "controllers": spec.controllers, "mode": spec.mode,
                 "kafka_version": spec.kafka_version, "admin_password": admin_password or "",
                 **dict.fromkeys(["ca_cert", *SECRET_OUTPUTS])}
        super().__init__(ClusterSecretsProvider(), name, props,
                         pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(
                             additional_secret_outputs=[*SECRET_OUTPUTS, "admin_password"])))


def _uploads(spec: ContainerSpec) -> list[docker.ContainerUploadArgs]:
    owner = spec.user.split(":", 1)[0]
    return [docker.ContainerUploadArgs(file=f.path, content=f.content, permissions=f"{f.mode:04o}", owner=owner,
                                       group=owner) for f in spec.files]


def _pick(specs: pulumi.Output[tuple[ContainerSpec, ...]], index: int,
          field: Callable[[ContainerSpec], T]) -> pulumi.Output[T]:
    """One field of one node's container spec, once the secrets it is rendered from are known."""
    return specs.apply(lambda all_specs: field(all_specs[index]))


class KafkaCluster(pulumi.ComponentResource):
    """Network, one volume and one container per node; outputs the bootstrap servers and the CA."""

    bootstrap_servers: pulumi.Output[str]
    ca_certificate: pulumi.Output[str]
    admin_password: pulumi.Output[str]

    def __init__(self, name: str, spec: ClusterSpec, image: str, admin_password: pulumi.Input[str] | None = None,
                 opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("kraftform:index:KafkaCluster", name, {"cluster": spec.name, "image": image}, opts)
        topo: Topology = topology(spec)
        child = pulumi.ResourceOptions(parent=self)
        self.secrets = ClusterSecretsResource(f"{name}-secrets", spec, admin_password, child)
        outputs = pulumi.Output.all(*(getattr(self.secrets, k) for k in ["ca_cert", *SECRET_OUTPUTS]))
        keys = ["ca_cert", *SECRET_OUTPUTS]
        specs = outputs.apply(lambda values: container_specs(
            topo, secrets_from_outputs(dict(zip(keys, values, strict=True))), image))
        addressing = docker_addressing(topo)
        self.network = docker.Network(f"{name}-network", name=f"kraftform-{spec.name}",
                                      labels=[docker.NetworkLabelArgs(label="dev.kraftform.cluster", value=spec.name)],
                                      opts=child)
        self.volumes: list[docker.Volume] = []
        self.containers: list[docker.Container] = []
        ports: list[int] = []
        for index, node in enumerate(topo.nodes):
            volume = docker.Volume(f"{name}-{node.name}-data", name=volume_name(node.name), opts=child)
            port = addressing.external_port(topo, node)
            ports += [port] if port is not None else []
            container = docker.Container(
                node.name, name=node.name, hostname=node.name, image=image,
                command=_pick(specs, index, lambda c: list(c.command)),
                user=_pick(specs, index, lambda c: c.user),
                uploads=pulumi.Output.secret(cast(Any, _pick(specs, index, _uploads))),  # stubs: Never
                networks_advanced=[docker.ContainerNetworksAdvancedArgs(name=self.network.name, aliases=[node.name])],
                volumes=[docker.ContainerVolumeArgs(volume_name=volume.name, container_path=DATA_DIR)],
                ports=[docker.ContainerPortArgs(internal=port, external=port, ip="127.0.0.1")] if port else [],
                labels=[docker.ContainerLabelArgs(label=k, value=v) for k, v in {
                    "dev.kraftform.cluster": spec.name, "dev.kraftform.node": node.name,
                    "dev.kraftform.roles": ",".join(node.roles)}.items()],
                restart="unless-stopped", must_run=True,
                # The name is fixed, so the old container must go before its replacement starts;
                # the volume, a resource of its own, stays.
                opts=pulumi.ResourceOptions(parent=self, delete_before_replace=True, depends_on=[volume]))
            self.volumes.append(volume)
            self.containers.append(container)
        self.bootstrap_servers = pulumi.Output.from_input(",".join(f"localhost:{p}" for p in ports))
        self.ca_certificate = self.secrets.ca_cert  # type: ignore[attr-defined]
        self.admin_password = pulumi.Output.secret(self.secrets.admin_password)  # type: ignore[attr-defined]
        self.register_outputs({"bootstrap_servers": self.bootstrap_servers, "ca_certificate": self.ca_certificate})
