"""Run container specs on a Docker engine through the Docker SDK for Python.

Each node is a container on the cluster's own bridge network, with its data on a named volume that
outlives the container (restart and re-create keep data; `down --purge` removes it). Configuration files
are copied in before the container starts, owned by the image's Kafka user, secrets mode 0600. Brokers
publish their external listener on 127.0.0.1 only; the host-side admin files point there.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import shutil
import socket
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, NotFound
from docker.models.containers import Container

from kraftform.cluster.config import Addressing
from kraftform.cluster.containers import (
    HOST_NETWORK,
    LABEL_CLUSTER,
    ContainerSpec,
    client_bootstrap,
    container_specs,
    docker_addressing,
    in_containers,
    kafka_image,
    network_name,
    node_metrics,
    render_in_containers,
    volume_name,
)
from kraftform.cluster.render import ClusterSecrets, RenderedNode, make_secrets
from kraftform.cluster.topology import topology
from kraftform.errors import HostUnreachable, UsageError
from kraftform.kafka.health import ClusterHealth, wait_healthy
from kraftform.plan.nodes import NodePlan, node_plan
from kraftform.runtime.engines.engine import (
    attached,
    create_container,
    docker_client,
    host_client,
    remove_attached,
    remove_if_present,
)
from kraftform.runtime.engines.images import build_kafka
from kraftform.runtime.nodes import deployment as dep
from kraftform.runtime.nodes.local import last_error_line
from kraftform.specset.hosts import moved_addresses, node_hosts
from kraftform.specset.model import ClusterSpec, Host

#: On each node's container: its `NodeRecord` (no secrets in it), so the deployment can be read back from Docker
#: alone (`recovered`): what `pulumi up` does, keeping no state directory between runs.
LABEL_RECORD = "dev.kraftform.record"
PREVIOUS = "-previous"


def _previous(name: str) -> str:
    return f"{name}{PREVIOUS}"


def _recorded(spec: ContainerSpec, record: dep.NodeRecord) -> ContainerSpec:
    return dataclasses.replace(spec, labels={**spec.labels, LABEL_RECORD: json.dumps(dataclasses.asdict(record))})


def port_taken(host: str, port: int) -> bool:
    """Whether Docker's proxy could not bind `host:port` now: a listener, or any socket (a client's outgoing
    connection among them) bound there without SO_REUSEADDR. Probed as the proxy binds, with SO_REUSEADDR, so a
    connection in TIME_WAIT does not count."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


def _ports_taken(cluster: str, ports: list[int]) -> str:
    return (f"cluster {cluster!r}: host port(s) {', '.join(map(str, ports))} already in use on this machine; "
            f"publish the cluster elsewhere with cluster.security.external_listener.base_port (brokers take "
            f"base_port + their index; metrics base_port + 300 + a broker's id, + 400 + a controller's id - 1000)")


@contextlib.contextmanager
def published_ports(cluster: str) -> Iterator[None]:
    """Docker's refusal to publish a port someone took since it was checked, as the user error it is."""
    try:
        yield
    except APIError as exc:
        found = re.search(r"listen tcp4? [^:]*:(\d+): bind: address already in use", str(exc))
        if found is None:
            raise
        raise UsageError(_ports_taken(cluster, [int(found.group(1))])) from None


def recovered(client: docker.DockerClient, cluster: str) -> tuple[list[dep.NodeRecord], dict[str, dep.NodeRecord]]:
    """The node records of `cluster` as its containers carry them: the nodes, and the ones kept aside while
    their replacement starts (a roll interrupted there: `revert_node` or `settle_node` still to come)."""
    nodes: list[dep.NodeRecord] = []
    previous: dict[str, dep.NodeRecord] = {}
    for container in client.containers.list(all=True, filters={"label": [f"{LABEL_CLUSTER}={cluster}",
                                                                          LABEL_RECORD]}):
        record = dep.NodeRecord(**json.loads(container.labels[LABEL_RECORD]))
        if str(container.name).endswith(PREVIOUS):
            previous[record.name] = record
        else:
            nodes.append(record)
    return sorted(nodes, key=lambda r: r.node_id), previous


def hosts_json(hosts: Iterable[Host]) -> str:
    return json.dumps({h.name: {"docker": h.docker, "tls": [h.tls.ca, h.tls.cert, h.tls.key] if h.tls else None,
                                "address": h.address} for h in hosts}, sort_keys=True)


def recorded_addresses(deployment: dep.Deployment) -> dict[str, str]:
    """Host name -> its address, for the hosts the records name (containers beside the nodes run there too)."""
    hosts = json.loads(deployment.extra.get(dep.HOSTS, "{}"))
    unknown = sorted(name for name, h in hosts.items() if not h.get("address"))
    if unknown:
        raise UsageError(f"the records of cluster {deployment.cluster_name!r} lack the address of host(s) "
                         f"{', '.join(unknown)} (kept since this kraftform); `kraftform cluster up` with its specs "
                         f"records them")
    return {name: str(h["address"]) for name, h in hosts.items()}


def host_engines(state_dir: Path, runtime: DockerRuntime | None = None) -> dict[str, docker.DockerClient]:
    """Host name -> its engine (`runtime`'s clients, if given), for every host the records of the cluster in
    `state_dir` name; {"": this machine's} for a cluster without hosts. Where containers beside the nodes
    (consumers, Spark, Connect workers) are. HostUnreachable for the first host that does not answer."""
    engines, lost = answering_engines(state_dir, runtime)
    if lost:
        raise lost[0]
    return engines


def answering_engines(state_dir: Path, runtime: DockerRuntime | None = None
                      ) -> tuple[dict[str, docker.DockerClient], list[HostUnreachable]]:
    """`host_engines` of the hosts that answer, and how each of the others did not."""
    runtime = runtime or DockerRuntime(state_dir)
    hosts = json.loads(dep.load(state_dir).extra.get(dep.HOSTS, "{}"))
    if not hosts:
        return {"": runtime.client}, []
    engines, lost = {}, []
    for host in hosts:
        try:
            engines[host] = runtime.engine(host)
        except HostUnreachable as exc:
            lost.append(exc)
    return engines, lost


def _host_names(cluster: ClusterSpec) -> dict[str, str]:
    """Node name -> the name of the spec host running it (none on one engine)."""
    return {name: h.name for name, h in node_hosts(cluster).items()}


class DockerRuntime:
    """The cluster's nodes as containers: on this machine's Docker engine, or on the engine of each node's host
    (`cluster.hosts`), one client per engine."""

    name = "docker"

    def __init__(self, state_dir: Path, image: str | None = None) -> None:
        self.state_dir = state_dir.resolve()
        self.image = image
        self._engines: dict[str, docker.DockerClient] = {}
        #: Host name -> its endpoint and TLS files (the specs', and the records'); node name -> the host the specs
        #: place it on (its record's, where there is one, wins: `engine_of`).
        self._hosts: dict[str, dict[str, Any]] = {}
        self._node_hosts: dict[str, str] = {}
        #: Host name -> how its engine did not answer: asked once per runtime, so a lost host costs a command one
        #: wait (`engine.HOST_ANSWER_S`), not one per node or container.
        self._unreachable: dict[str, HostUnreachable] = {}

    @property
    def client(self) -> docker.DockerClient:
        """This machine's own engine (a cluster without hosts runs there, and so do its consumers)."""
        return self.engine("")

    def engine(self, host: str) -> docker.DockerClient:
        """The engine of a spec host ("": this machine's), one client each for the runtime's life."""
        if host not in self._engines:
            if not host:
                self._engines[host] = docker_client()
            else:
                if host not in self._hosts:
                    self._hosts_from_state()
                found = self._hosts.get(host)
                if found is None:
                    raise UsageError(f"host {host!r} is not in the specs or the records of {self.state_dir}")
                if host in self._unreachable:
                    raise self._unreachable[host]
                try:
                    self._engines[host] = host_client(host, found["docker"], found["tls"])
                except HostUnreachable as exc:
                    self._unreachable[host] = exc
                    raise
        return self._engines[host]

    def host_of(self, name: str) -> str:
        """The host of node `name` ("": this machine's engine): the one its record names (where its container and
        data are), else the one the specs place it on (a node being added)."""
        recorded = self._hosts_from_state()
        return recorded[name] if name in recorded else self._node_hosts.get(name, "")

    def know(self, cluster: ClusterSpec) -> None:
        """The hosts and node placement the specs give."""
        self._hosts.update(json.loads(hosts_json(cluster.hosts)))
        self._node_hosts.update(_host_names(cluster))

    def _hosts_from_state(self) -> dict[str, str]:
        """The hosts the records name (their endpoints learnt) and node name -> its recorded host."""
        if not (self.state_dir / dep.STATE_FILE).is_file():
            return {}
        deployment = dep.load(self.state_dir)
        for name, endpoint in json.loads(deployment.extra.get(dep.HOSTS, "{}")).items():
            self._hosts.setdefault(name, endpoint)
        return {r.name: r.host for r in (*deployment.nodes, *deployment.previous.values())}

    def engine_of(self, name: str) -> docker.DockerClient:
        """The engine that runs node `name` (`host_of`)."""
        return self.engine(self.host_of(name))

    def _network(self, client: docker.DockerClient, name: str, cluster: str) -> None:
        if not client.networks.list(names=[name]):
            client.networks.create(name, driver="bridge", labels={LABEL_CLUSTER: cluster})

    def create_container(self, client: docker.DockerClient, spec: ContainerSpec, record: dep.NodeRecord) -> Container:
        """The node's container, carrying its record."""
        return create_container(client, _recorded(spec, record))

    def _image(self, kafka_version: str) -> str:
        return self.image or kafka_image(kafka_version)

    def _specs(self, cluster: ClusterSpec, secrets: ClusterSecrets, kafka_version: str) -> dict[str, ContainerSpec]:
        return {s.name: s for s in container_specs(topology(in_containers(cluster)), secrets,
                                                   self._image(kafka_version),
                                                   dep.principal_mapping_now(self.state_dir))}

    def rendered(self, cluster: ClusterSpec, keep_new_keys: bool = False) -> tuple[RenderedNode, ...]:
        """As `LocalRuntime.rendered`."""
        topo = topology(in_containers(cluster))
        return render_in_containers(topo, dep.grown_secrets(self.state_dir, topo, docker_addressing(topo),
                                                            keep_new_keys), dep.principal_mapping_now(self.state_dir))

    def node_plan(self, cluster: ClusterSpec) -> NodePlan | None:
        if not (self.state_dir / dep.SECRETS_FILE).is_file():
            return None
        self.know(in_containers(cluster))
        deployment = dep.load(self.state_dir)
        rendered = self.rendered(cluster)
        plan = node_plan(dep.running_nodes(deployment), rendered, cluster.kafka_version,
                         dep.load_secrets(self.state_dir).dynamic_quorum)
        placed = _host_names(cluster)
        wanted = {r.node.name for r in rendered}
        moved = [f"{r.name} runs on {r.host or 'this machine'} and the specs put it on "
                 f"{placed.get(r.name) or 'this machine'}: a node does not move between hosts (its data is on its "
                 f"host's volume); add a node on the new host, let the plan move replicas to it, then remove this one"
                 for r in deployment.nodes if r.name in wanted and r.host != placed.get(r.name, "")]
        recorded = {name: str(h["address"]) for name, h in json.loads(deployment.extra.get(dep.HOSTS, "{}")).items()
                    if h.get("address")}
        moved += moved_addresses(cluster, recorded, (r.host for r in deployment.nodes))
        return dataclasses.replace(plan, refused=plan.refused + tuple(moved)) if moved else plan

    def up(self, cluster: ClusterSpec, admin_password: str | None = None, timeout: float = 240,
           secrets: ClusterSecrets | None = None) -> ClusterHealth:
        """Create the network, volumes and containers and start them; idempotent like the local runtime. The
        cluster's secrets are made here unless given (`pulumi up` keeps them in the stack)."""
        cluster = in_containers(cluster)
        self.know(cluster)
        topo = topology(cluster)
        addr: Addressing = docker_addressing(topo)
        deployment = dep.load_existing(self.state_dir, self.name, cluster.name)
        if deployment is not None:
            dep.require_as_declared(self.state_dir, deployment, topo, self.node_plan(cluster))
            for record in deployment.nodes:
                with published_ports(cluster.name):
                    self.engine(record.host).containers.get(record.handle).start()
            self.record_endpoints()
        else:
            secrets = secrets or make_secrets(topo, addr, admin_password)
            image = self._image(cluster.kafka_version)
            specs = container_specs(topo, secrets, image)
            self.require_image(image, {s.host for s in specs if s.host})
            leftovers = [s.volume for s in specs
                         if self.engine(s.host).volumes.list(filters={"name": f"^{s.volume}$"})]
            if leftovers:
                # Their data belongs to another cluster id; never reuse or delete it silently.
                raise UsageError(
                    f"data volumes from an earlier cluster exist ({', '.join(leftovers)}) but {self.state_dir} "
                    f"holds no cluster: use that cluster's --state-dir, or remove them with "
                    f"`docker volume rm {' '.join(leftovers)}`")
            busy = sorted(p.host_port for s in specs for p in s.ports if port_taken(p.host_ip, p.host_port))
            if busy:
                raise UsageError(_ports_taken(cluster.name, busy))
            on = {s.name: s.host for s in specs}
            records = [dep.started(r, cluster.kafka_version, r.node.name, on[r.node.name])
                       for r in render_in_containers(topo, secrets)]
            network = network_name(cluster.name)
            bridged = any(s.network != HOST_NETWORK for s in specs)
            network_there = bool(self.client.networks.list(names=[network])) if bridged else True
            with self._undone_on_failure(specs, remove_network=not network_there):
                dep.save_secrets(self.state_dir, secrets)
                if bridged:
                    self._network(self.client, network, cluster.name)
                for spec, record in zip(specs, records, strict=True):
                    client = self.engine(spec.host)
                    remove_if_present(client, spec.name)
                    with published_ports(cluster.name):
                        self.create_container(client, spec, record).start()
            bootstrap = client_bootstrap(topo, specs)
            dep.write_client_files(self.state_dir, bootstrap, cluster.security.admin_user, secrets.admin_password,
                                   cluster.security.sasl_mechanism, secrets.ca.cert_pem)
            extra = {"network": network, "image": image} | (
                {dep.HOSTS: hosts_json(cluster.hosts)} if cluster.hosts else {})
            deployment = dep.Deployment(self.name, cluster.name, bootstrap, cluster.brokers, cluster.kafka_version,
                                        records, extra)
            dep.save(self.state_dir, deployment)
            dep.write_endpoints(self.state_dir, node_metrics(topo, specs), _host_names(cluster))
        return wait_healthy(dep.admin_config(self.state_dir), {n.node_id: n.name for n in topo.brokers}, timeout,
                            self.last_error, self.restart_node)

    def require_image(self, image: str, hosts: set[str]) -> None:
        """Every host's engine has `image` (the nodes', the consumers'): kraftform builds images on this machine
        only, and never copies one to a host it was given (`docker save IMAGE | docker -H ENDPOINT load` does, or a
        registry)."""
        for host in sorted(hosts):
            try:
                self.engine(host).images.get(image)
            except docker.errors.ImageNotFound:
                raise UsageError(f"host {host!r}: its Docker engine has no image {image}; load it there "
                                 f"(`docker save {image} | docker -H {self._hosts[host]['docker']} load`) or pull it "
                                 f"from your registry, then run again") from None

    @contextlib.contextmanager
    def _undone_on_failure(self, specs: tuple[ContainerSpec, ...], remove_network: bool) -> Iterator[None]:
        """A first start that fails takes back what it made (containers, their empty volumes, the network if it
        made it, the secrets), so the state directory and Docker are as before it and the next `up` starts afresh
        instead of refusing its own volumes as another cluster's."""
        try:
            yield
        except BaseException:
            with contextlib.suppress(Exception):
                for spec in specs:
                    client = self.engine(spec.host)
                    remove_if_present(client, spec.name)
                    with contextlib.suppress(NotFound):
                        client.volumes.get(spec.volume).remove(force=True)
                for network in self.client.networks.list(names=[network_name(specs[0].labels[LABEL_CLUSTER])]) \
                        if remove_network else []:
                    network.remove()
            (self.state_dir / dep.SECRETS_FILE).unlink(missing_ok=True)
            raise

    # --- what a roll and a resize do to single nodes (`runtime.rolling.Nodes`) ---------------------------
    def _spec(self, cluster: ClusterSpec, name: str) -> ContainerSpec:
        """A node's container as the specs now describe it; the image of their Kafka version built if missing."""
        self.know(in_containers(cluster))
        spec = self._specs(cluster, dep.load_secrets(self.state_dir), cluster.kafka_version)[name]
        if spec.host:
            self.require_image(spec.image, {spec.host})
        elif self.image is None:
            build_kafka(self.client, [], cluster.kafka_version)
        return spec

    def process_id(self, name: str) -> str:
        """The container's id and start time: a restart changes the second."""
        try:
            container = self.engine_of(name).containers.get(name)
        except NotFound:
            return ""
        state = container.attrs["State"]
        return f"{container.id[:12]}@{state['StartedAt']}" if state.get("Running") else ""

    def replace_node(self, cluster: ClusterSpec, rendered: RenderedNode) -> None:
        """Stop the node's container (a controlled shutdown), keep it aside as `<name>-previous`, and start a new
        one from its new spec on the same data volume; `settle_node` or `revert_node` ends it."""
        name = rendered.node.name
        spec = self._spec(cluster, name)
        client = self.engine_of(name)
        deployment = dep.load(self.state_dir)
        record = deployment.node(name)
        old = client.containers.get(record.handle)
        old.stop(timeout=60)
        remove_if_present(client, _previous(name))
        old.rename(_previous(name))
        new = dep.started(rendered, cluster.kafka_version, name, spec.host)
        self.create_container(client, spec, new).start()
        deployment.previous[name] = record
        deployment.nodes[deployment.nodes.index(record)] = new
        self._record_hosts(deployment)
        dep.save(self.state_dir, deployment)

    def revert_node(self, name: str) -> None:
        client = self.engine_of(name)
        deployment = dep.load(self.state_dir)
        record, old = deployment.node(name), deployment.previous.pop(name)
        remove_if_present(client, name)
        previous = client.containers.get(_previous(name))
        previous.rename(name)
        previous.start()
        deployment.nodes[deployment.nodes.index(record)] = old
        dep.save(self.state_dir, deployment)

    def settle_node(self, name: str) -> None:
        deployment = dep.load(self.state_dir)
        if deployment.previous.pop(name, None) is not None:
            dep.save(self.state_dir, deployment)
        remove_if_present(self.engine_of(name), _previous(name))

    def add_node(self, cluster: ClusterSpec, rendered: RenderedNode) -> None:
        """A new container on a new volume; its command formats the volume with the cluster's id first. One this
        cluster's earlier add made (interrupted before it was recorded) is adopted, as its label records it."""
        name = rendered.node.name
        self.know(in_containers(cluster))
        client = self.engine_of(name)
        adopted = self._adopted(cluster.name, name)
        if adopted is not None:
            deployment = dep.load(self.state_dir)
            deployment.nodes.append(adopted)
            dep.save(self.state_dir, deployment)
            return
        spec = self._spec(cluster, name)
        if client.volumes.list(filters={"name": f"^{spec.volume}$"}):
            raise UsageError(f"a data volume {spec.volume} exists from an earlier node {name}; kraftform will not "
                             f"adopt its data: remove it (`docker volume rm {spec.volume}`) and apply again")
        remove_if_present(client, name)
        record = dep.started(rendered, cluster.kafka_version, name, spec.host)
        self.create_container(client, spec, record).start()
        deployment = dep.load(self.state_dir)
        deployment.nodes.append(record)
        self._record_hosts(deployment)
        dep.save(self.state_dir, deployment)

    def _record_hosts(self, deployment: dep.Deployment) -> None:
        """The hosts the records name, kept with them: a node added on a new host is found there by commands given
        only the state directory, and a host drained of its nodes is forgotten."""
        if self._hosts or dep.HOSTS in deployment.extra:
            known = json.loads(deployment.extra.get(dep.HOSTS, "{}")) | self._hosts
            used = {r.host for r in (*deployment.nodes, *deployment.previous.values())}
            deployment.extra[dep.HOSTS] = json.dumps({h: e for h, e in known.items() if h in used}, sort_keys=True)

    def record_endpoints(self) -> None:
        """The specs' endpoint (and TLS files) of each recorded host whose engine answered there, kept in the
        records: after a host's engine moves (another socket, port, certificate, or the checkout holding its TLS
        files), `apply` records where it answers now, and commands given only the state directory reach it. A host
        that did not answer keeps what was recorded."""
        deployment = dep.load(self.state_dir)
        recorded = json.loads(deployment.extra.get(dep.HOSTS, "{}"))
        moved = {h: self._hosts[h] for h in recorded if h in self._engines and self._hosts.get(h) != recorded[h]}
        if moved:
            deployment.extra[dep.HOSTS] = json.dumps(recorded | moved, sort_keys=True)
            dep.save(self.state_dir, deployment)

    def _adopted(self, cluster: str, name: str) -> dep.NodeRecord | None:
        """The record of a container of this cluster named `name` that no record lists, started if stopped."""
        try:
            container = self.engine_of(name).containers.get(name)
        except NotFound:
            return None
        if container.labels.get(LABEL_CLUSTER) != cluster or LABEL_RECORD not in container.labels:
            return None
        if container.status != "running":
            container.start()
        return dep.NodeRecord(**json.loads(container.labels[LABEL_RECORD]))

    def remove_node(self, name: str, purge: bool) -> None:
        client = self.engine_of(name)
        deployment = dep.load(self.state_dir)
        record = deployment.node(name)
        with contextlib.suppress(NotFound):
            client.containers.get(record.handle).stop(timeout=60)
        deployment.nodes.remove(record)
        self._record_hosts(deployment)
        dep.save(self.state_dir, deployment)
        if purge:
            remove_if_present(client, record.handle)
            with contextlib.suppress(NotFound):
                client.volumes.get(volume_name(name)).remove(force=True)

    def last_error(self, name: str) -> str:
        try:
            logs = self.engine_of(name).containers.get(name).logs(tail=400).decode(errors="replace")
        except NotFound:
            return "(its container is gone)"
        return last_error_line(logs)

    def set_bootstrap(self, cluster: ClusterSpec) -> None:
        cluster = in_containers(cluster)
        topo = topology(cluster)
        specs = container_specs(topo, dep.load_secrets(self.state_dir), self._image(cluster.kafka_version))
        dep.reshaped(self.state_dir, cluster, client_bootstrap(topo, specs))
        dep.write_endpoints(self.state_dir, node_metrics(topo, specs), _host_names(cluster))

    def kill_node(self, name: str, signal: str = "SIGKILL") -> None:
        container = self.engine_of(name).containers.get(dep.load(self.state_dir).node(name).handle)
        container.kill(signal=signal)
        container.wait(timeout=60)

    def restart_node(self, name: str) -> None:
        """SIGKILL and start again (a broker that never registered holds nothing to hand over)."""
        self.kill_node(name)
        self.start_node(name)

    def start_node(self, name: str) -> None:
        """Start a stopped node's container; one a roll set aside and did not replace (interrupted in between)
        gets its name back first."""
        client, handle = self.engine_of(name), dep.load(self.state_dir).node(name).handle
        try:
            container = client.containers.get(handle)
        except NotFound:
            container = client.containers.get(_previous(name))
            container.rename(handle)
        container.start()

    def stop(self) -> None:
        """Containers attached to the cluster (consumers) first, then brokers (controlled shutdown needs the
        controllers), then controllers: on every host that answers; then HostUnreachable naming the others (and
        their nodes), whose containers are as they were."""
        deployment = dep.load(self.state_dir)
        engines, lost = answering_engines(self.state_dir, self)
        beside = [c for client in engines.values() for c in attached(client, deployment.cluster_name)]
        for container in beside:
            with contextlib.suppress(NotFound):
                container.stop(timeout=60)
        for want_broker in (True, False):
            for record in self._reached(deployment, lost):
                if ("broker" in record.roles) == want_broker:
                    with contextlib.suppress(NotFound):
                        self.engine(record.host).containers.get(record.handle).stop(timeout=30)
        self._say_lost(deployment, lost, "stopped")

    @staticmethod
    def _reached(deployment: dep.Deployment, lost: Sequence[HostUnreachable]) -> list[dep.NodeRecord]:
        """The records of the nodes on hosts that answered."""
        return [r for r in deployment.nodes if r.host not in {exc.host for exc in lost}]

    @staticmethod
    def _say_lost(deployment: dep.Deployment, lost: Sequence[HostUnreachable], done: str) -> None:
        if lost:
            raise HostUnreachable(lost[0].host, f"{done} what the hosts that answer run; not on " + "; ".join(
                f"{exc} (nodes {', '.join(r.name for r in deployment.nodes if r.host == exc.host) or 'none'})"
                for exc in lost) + ": run the command again once it answers (the state directory is kept)")

    def down(self, purge: bool = False, keep_network: bool = False) -> None:
        """Stop; with `purge`, remove the containers, their volumes, the network (unless `keep_network`: Pulumi's
        own resource) and the state directory. With a host that does not answer, what the others run is stopped
        (and purged) and the state directory kept, for a run once it answers; HostUnreachable names it."""
        try:
            self.stop()
        except HostUnreachable:
            if not purge:
                raise
        if not purge:
            return
        deployment = dep.load(self.state_dir)
        engines, lost = answering_engines(self.state_dir, self)
        for engine in engines.values():  # consumers, Spark, Connect workers beside it
            remove_attached(engine, deployment.cluster_name, [LABEL_CLUSTER], purge=True)
        for record in self._reached(deployment, lost):
            client = self.engine(record.host)
            remove_if_present(client, record.handle)
            with contextlib.suppress(NotFound):
                client.volumes.get(volume_name(record.name)).remove(force=True)
        self._say_lost(deployment, lost, "stopped and purged")
        for network in [] if keep_network or dep.HOSTS in deployment.extra else \
                self.client.networks.list(names=[deployment.extra["network"]]):
            network.remove()
        shutil.rmtree(self.state_dir)

    def resident_bytes(self) -> int:
        total = 0
        for record in dep.load(self.state_dir).nodes:
            stats = self.engine(record.host).containers.get(record.handle).stats(stream=False)
            memory = stats.get("memory_stats", {})
            total += int(memory.get("usage", 0)) - int(memory.get("stats", {}).get("cache", 0))
        return total
