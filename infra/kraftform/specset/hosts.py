"""Which host runs each node, and what the loss of one host does to the quorum and the topics. Pure.

A cluster spread over machines survives a machine's loss only if no machine holds a majority of the voters
and no partition keeps more of its replicas on one machine than its replication factor less min.insync.replicas
allows. Replicas follow racks (Kafka's rack-aware assignment and kraftform's placement give a partition at most
ceil(RF / racks) replicas on one rack), so what a host can take down is counted from the racks it runs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from kraftform.errors import Problem
from kraftform.specset.model import MAX_BROKERS_ON_HOSTS, ClusterSpec, Host, SpecSet

#: What a topic made without settings of its own is called in a host's loss.
DEFAULTS = "<cluster defaults>"
#: Node ids of dedicated controllers start above this (`cluster.topology` numbers nodes the same way).
CONTROLLER_ID_BASE = 1000


@dataclass(frozen=True)
class LaidOutNode:
    """A node as the host layout sees it: its id, name, rack and whether it votes or holds replicas."""

    node_id: int
    name: str
    rack: str | None
    broker: bool
    voter: bool
    #: Which controller it is (0, 1, ...), for a controller placed by rack; None for a broker alone.
    controller_index: int | None = None


def laid_out_nodes(c: ClusterSpec) -> tuple[LaidOutNode, ...]:
    """Every node of the cluster, numbered as `cluster.topology` numbers them."""
    if c.mode == "combined":
        return tuple(LaidOutNode(i + 1, f"{c.name}-node-{i}", c.rack_of(i), True, i < c.controllers,
                                 i if i < c.controllers else None) for i in range(c.brokers))
    return (*(LaidOutNode(CONTROLLER_ID_BASE + i + 1, f"{c.name}-controller-{i}", None, False, True, i)
              for i in range(c.controllers)),
            *(LaidOutNode(i + 1, f"{c.name}-broker-{i}", c.rack_of(i), True, False) for i in range(c.brokers)))


def node_number(node_id: int) -> tuple[bool, int]:
    """Whether a node id is a dedicated controller's, and its number among its kind (controllers from 1 after
    CONTROLLER_ID_BASE, brokers and combined nodes their id): what ports and loopback addresses are made of."""
    return (True, node_id - CONTROLLER_ID_BASE) if node_id > CONTROLLER_ID_BASE else (False, node_id)


def listener_ports(base_port: int, node_id: int, broker_index: int | None, controller: bool) -> dict[str, int]:
    """A node's listener ports on its host, from the external listener's base port: brokers base + index
    (clients) and base + 100 + index (between brokers), controllers base + 200 + their index. Every node of the
    cluster has its own, so any two share a host."""
    out: dict[str, int] = {}
    if broker_index is not None:
        out |= {"CLIENT": base_port + broker_index, "INTERNAL": base_port + 100 + broker_index}
    if controller:
        out["CONTROLLER"] = base_port + 200 + node_number(node_id)[1] - 1
    return out


def metrics_port(base_port: int, node_id: int) -> int:
    """Where a node serves its metrics on its host (or, off hosts, is published on this machine's loopback): from
    the base port and the node id, so an added node moves nobody (brokers base+300+id, controllers
    base+400+id-1000)."""
    controller, number = node_number(node_id)
    return base_port + (400 if controller else 300) + number


def node_ports(c: ClusterSpec, node: LaidOutNode) -> dict[str, int]:
    """Every port `node` listens on at its host's address: its listeners and its metrics."""
    base = c.security.external_listener.base_port
    return {**listener_ports(base, node.node_id, node.node_id - 1 if node.broker else None, node.voter),
            "metrics": metrics_port(base, node.node_id)}


def _rack_hosts(c: ClusterSpec) -> dict[str, Host]:
    """Rack -> the first host naming it (a second is refused)."""
    out: dict[str, Host] = {}
    for h in c.hosts:
        for rack in h.racks:
            out.setdefault(rack, h)
    return out


def host_of_node(c: ClusterSpec, node: LaidOutNode) -> Host | None:
    """The host that names the node's id; else, for a broker, the host of its rack; else, for a dedicated
    controller, the host of rack number i (controller i follows racks[i % len(racks)])."""
    for h in c.hosts:
        if node.node_id in h.nodes:
            return h
    racks = _rack_hosts(c)
    if node.broker:
        return racks.get(node.rack) if node.rack else None
    if node.controller_index is not None and c.racks:
        return racks.get(c.racks[node.controller_index % len(c.racks)])
    return None


def node_hosts(c: ClusterSpec) -> dict[str, Host]:
    """Node name -> its host, for every node some host runs (all of them, in specs `validate` accepted)."""
    return {n.name: h for n in laid_out_nodes(c) if (h := host_of_node(c, n)) is not None}


def spark_hosts(c: ClusterSpec) -> tuple[Host, ...]:
    """The hosts running Spark (`spark.hosts`, else every host): a standalone worker each; the first also runs the
    master and the consumers' containers. Empty for a cluster on one machine."""
    named = {h.name: h for h in c.hosts}
    return tuple(named[n] for n in c.spark.hosts if n in named) or c.hosts


#: A host's own directories: the containers' user (uid 1000) is given `spark.shared_dir` when kraftform makes it,
#: so a spec naming one of these (or a directory inside one) would hand a host's system files to that user.
SYSTEM_DIRS = ("/bin", "/boot", "/dev", "/etc", "/lib", "/lib32", "/lib64", "/libx32", "/proc", "/root", "/run",
               "/sbin", "/sys", "/usr", "/var/lib/docker", "/var/run", "/snap")
#: Directories that hold every user's or every service's files: refused themselves, fine to hold a shared_dir.
ROOTS = ("/", "/home", "/mnt", "/media", "/opt", "/srv", "/tmp", "/var", "/var/lib", "/data")


def unsafe_shared_dir(path: str) -> str | None:
    """Why `spark.shared_dir` cannot be `path` (None when it can): it must be a plain absolute path of a directory
    of its own, outside the host's system directories."""
    parts = path.split("/")
    if not path.startswith("/") or any(part in (".", "..") for part in parts[1:]) or "//" in path:
        return f"spark.shared_dir {path!r} must be a plain absolute path (no '.', '..' or '//')"
    normal = path.rstrip("/") or "/"
    system = next((d for d in SYSTEM_DIRS if normal == d or normal.startswith(d + "/")), None)
    if system is not None:
        return (f"spark.shared_dir {path!r} is in the host's system directory {system}: name a directory of its own "
                f"on the shared file system (for example /srv/kraftform)")
    if normal in ROOTS:
        return (f"spark.shared_dir {path!r} holds other users' or services' files: name a directory of its own inside "
                f"it (for example {normal.rstrip('/')}/kraftform)")
    return None


@dataclass(frozen=True)
class TopicLoss:
    """One topic (or the defaults a topic gets) with the host gone: replicas left against what writes need."""

    topic: str
    replication_factor: int
    replicas_lost: int
    min_insync: int

    @property
    def replicas_left(self) -> int:
        return self.replication_factor - self.replicas_lost

    @property
    def writable(self) -> bool:
        return self.replicas_left >= self.min_insync


@dataclass(frozen=True)
class HostLoss:
    """What the loss of one host takes: its voters and, for each topic, the replicas of a partition it may hold."""

    host: str
    nodes: tuple[str, ...]
    voters: int
    voters_lost: int
    topics: tuple[TopicLoss, ...]

    @property
    def majority(self) -> int:
        return self.voters // 2 + 1

    @property
    def quorum_alive(self) -> bool:
        return self.voters - self.voters_lost >= self.majority

    @property
    def unwritable(self) -> tuple[TopicLoss, ...]:
        return tuple(t for t in self.topics if not t.writable)

    @property
    def survived(self) -> bool:
        return self.quorum_alive and not self.unwritable


def replicas_on_host(c: ClusterSpec, host: Host, replication_factor: int) -> int:
    """The most replicas of one partition the host can hold: with racks, up to ceil(RF / racks) on each rack,
    counted over the brokers of each rack it runs; without, one on each of its brokers."""
    here = [n for n in laid_out_nodes(c) if n.broker and host_of_node(c, n) == host]
    if not c.racks:
        return min(replication_factor, len(here))
    per_rack = math.ceil(replication_factor / len(c.racks))
    return min(replication_factor, sum(min(per_rack, sum(1 for n in here if n.rack == rack)) for rack in c.racks))


def host_losses(s: SpecSet) -> tuple[HostLoss, ...]:
    """Each host's loss: the voters left and every declared topic's replicas left (and the cluster's defaults,
    which a topic made without settings of its own gets)."""
    c = s.cluster
    nodes = laid_out_nodes(c)
    voters = sum(1 for n in nodes if n.voter)
    shapes = {(t.name, t.replication_factor, c.min_insync(t)) for t in s.topics}
    shapes.add((DEFAULTS, c.defaults.replication_factor, c.defaults.min_insync_replicas))
    out = []
    for h in c.hosts:
        here = [n for n in nodes if host_of_node(c, n) == h]
        topics = tuple(TopicLoss(name, rf, replicas_on_host(c, h, rf), isr) for name, rf, isr in sorted(shapes))
        out.append(HostLoss(h.name, tuple(n.name for n in here), voters, sum(1 for n in here if n.voter), topics))
    return tuple(out)


def loss_text(loss: HostLoss) -> list[str]:
    """What the host's loss breaks, each with its numbers."""
    out = []
    if not loss.quorum_alive:
        out.append(f"it runs {loss.voters_lost} of the {loss.voters} controllers: {loss.voters - loss.voters_lost} "
                   f"would be left, under the majority of {loss.majority}, and the cluster would stop")
    groups: dict[tuple[int, int, int, int], list[str]] = {}
    for t in loss.unwritable:
        groups.setdefault((t.replicas_left, t.replication_factor, t.replicas_lost, t.min_insync), []).append(t.topic)
    for (left, rf, lost, isr), names in sorted(groups.items()):
        shown = ", ".join(repr(n) for n in names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        out.append(f"{len(names)} topic(s) would keep {left} of their {rf} replicas of a partition ({lost} on this "
                   f"host), under min.insync.replicas {isr}, and refuse acks=all writes: {shown}")
    return out


def check_hosts(s: SpecSet) -> Iterator[Problem]:
    """Every host names a reachable engine and runs something, every node runs on exactly one host, and (with
    `host_failures_tolerated: 1`) no host's loss stops the quorum or a topic's writes."""
    c = s.cluster
    if not c.hosts:
        return
    problems = list(_layout_problems(c))
    yield from problems
    if problems:
        return
    yield from _port_problems(s)
    if c.host_failures_tolerated == 0:
        return
    for loss in host_losses(s):
        at = next(h.location for h in c.hosts if h.name == loss.host)
        for line in loss_text(loss):
            yield Problem(at, f"host {loss.host!r}: {line} (spread the nodes over more hosts, or set "
                              f"host_failures_tolerated: 0 to accept it)")


def _layout_problems(c: ClusterSpec) -> Iterator[Problem]:
    if c.brokers > MAX_BROKERS_ON_HOSTS:
        yield Problem(c.location, f"hosts: a cluster on hosts has at most {MAX_BROKERS_ON_HOSTS} brokers (each "
                                  f"listens on ports of its own from base_port), got {c.brokers}")
    nodes = laid_out_nodes(c)
    ids = {n.node_id: n for n in nodes}
    racks: dict[str, str] = {}
    named: dict[int, str] = {}
    for h in c.hosts:
        yield from _endpoint_problems(h)
        for rack in h.racks:
            if rack not in c.racks:
                yield Problem(h.location, f"host {h.name!r}: rack {rack!r} is not one of cluster.racks "
                                          f"({', '.join(c.racks) or 'none declared'})")
            elif rack in racks:
                yield Problem(h.location, f"host {h.name!r}: rack {rack!r} is already on host {racks[rack]!r}")
            racks.setdefault(rack, h.name)
        for node_id in h.nodes:
            if node_id not in ids:
                yield Problem(h.location, f"host {h.name!r}: node id {node_id} is not a node of cluster "
                                          f"{c.name!r} (brokers {_id_range(nodes, True)}, controllers "
                                          f"{_id_range(nodes, False)})")
            elif node_id in named:
                yield Problem(h.location, f"host {h.name!r}: node id {node_id} is already on host "
                                          f"{named[node_id]!r}")
            named.setdefault(node_id, h.name)
    placed = node_hosts(c)
    homeless = [n.name for n in nodes if n.name not in placed]
    if homeless:
        yield Problem(c.location, f"hosts: no host runs {', '.join(homeless)}: give every rack of cluster.racks "
                                  f"a host, or name the node ids under a host's `nodes`")
    for h in c.hosts:
        if not any(placed.get(n.name) == h for n in nodes):
            yield Problem(h.location, f"host {h.name!r} runs no node: name its racks or node ids, or remove it")


#: The standalone master's RPC port on the first Spark host (its UIs and the workers' listen on loopback).
SPARK_MASTER_PORT = 7077


def _port_problems(s: SpecSet) -> Iterator[Problem]:
    """No two things kraftform runs on one host listen on one port of its address: the nodes' ports (from
    base_port), the standalone Spark master's, and each Connect cluster's REST ports, whose workers may run on any
    host (a worker goes to a host by its index)."""
    c = s.cluster
    taken: dict[str, dict[int, str]] = {h.name: {} for h in c.hosts}
    for node in laid_out_nodes(c):
        host = host_of_node(c, node)
        if host is not None:
            for listener, port in node_ports(c, node).items():
                taken[host.name][port] = f"{node.name}'s {listener} port"
    spark = spark_hosts(c) if c.spark.master == "standalone" else ()
    if spark:
        held = taken[spark[0].name].get(SPARK_MASTER_PORT)
        if held:
            yield Problem(c.location, f"spark: the standalone master listens on {SPARK_MASTER_PORT} of host "
                                      f"{spark[0].name!r}, which is {held}: move security.external_listener."
                                      f"base_port")
        taken[spark[0].name][SPARK_MASTER_PORT] = "the Spark master's port"
    for connect in s.connect:  # one Connect cluster's ports against another's: checks.py
        for index in range(connect.workers):
            port = connect.rest_port + index
            held = next((f"{what} on host {h!r}" for h, ports in taken.items() if (what := ports.get(port))), None)
            if held:
                yield Problem(connect.location, f"connect {connect.name!r}: worker {index}'s REST port {port} is "
                                                f"{held}; choose another rest_port")
                break


def _id_range(nodes: tuple[LaidOutNode, ...], brokers: bool) -> str:
    ids = sorted(n.node_id for n in nodes if (n.broker if brokers else not n.broker))
    return f"{ids[0]}..{ids[-1]}" if ids else "none"


def _endpoint_problems(h: Host) -> Iterator[Problem]:
    scheme = h.docker.split("://", 1)[0]
    if scheme == "tcp" and h.tls is None:
        yield Problem(h.location, f"host {h.name!r}: {h.docker} without tls: the Docker API over TCP is root on "
                                  f"the host for anyone who reaches the port; give tls: {{ca, cert, key}} (the "
                                  f"engine started with --tlsverify), or use ssh://")
    if h.tls is not None and scheme != "tcp":
        yield Problem(h.location, f"host {h.name!r}: tls is for a tcp:// endpoint, not {scheme}://")


def moved_addresses(c: ClusterSpec, recorded: Mapping[str, str], running: Iterable[str]) -> tuple[str, ...]:
    """Why a running cluster cannot follow its specs to a host's new address: each host that runs nodes
    (`running`: their hosts' names) and whose address (`recorded`: host -> address) the specs change. Its nodes'
    certificates, their listeners and the quorum's voters name the old one; a roll would restart them into
    connections that fail the TLS check."""
    hosts = set(running)
    return tuple(f"host {h.name!r}: its address changed from {recorded[h.name]} to {h.address}, but its nodes' "
                 f"certificates, listeners and the quorum's voters name {recorded[h.name]}: kraftform does not move "
                 f"running nodes to a new address. Give the host its address back, or declare a new host at the new "
                 f"address, let the plan move the replicas there, then remove this one"
                 for h in c.hosts if h.name in hosts and recorded.get(h.name, h.address) != h.address)


def layout(c: ClusterSpec) -> Mapping[str, tuple[str, ...]]:
    """Host name -> the names of the nodes it runs, in node order."""
    placed = node_hosts(c)
    return {h.name: tuple(n.name for n in laid_out_nodes(c) if placed.get(n.name) == h) for h in c.hosts}
