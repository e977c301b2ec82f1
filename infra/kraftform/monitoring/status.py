"""`kraftform status`'s verdict: what a cluster was seen doing, judged against what the specs declare. Pure.

Every problem is one sentence naming the node, topic or consumer it is about, so a cron job or a CI probe that
reads only the exit code and the first lines still knows where to look. Lag limits come from the consumer's
profile: a latency pipeline is behind long before a throughput one is. Kafka Connect clusters beside the cluster
are judged too: each declared connector in its declared state, no task failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from kraftform.cluster.topology import Topology
from kraftform.plan.connectors import FAILED, LiveConnector
from kraftform.specset.hosts import node_hosts
from kraftform.specset.model import ConnectSpec

#: Records a consumer may be behind before `status` (and the lag alert) says so, by profile: about the records
#: such a consumer reads in a few seconds at the rates docs/benchmarks.md measured.
LAG_LIMITS: Mapping[str, int] = {"latency": 1_000, "balanced": 10_000, "durability": 10_000, "throughput": 100_000}
DEFAULT_LAG_LIMIT = 10_000
#: A voter whose last catch-up with the leader is older than this is behind (Kafka's fetch timeout is 2 s;
#: a scrape-friendly margin above it).
VOTER_BEHIND_MS = 5_000

TopicPartition = tuple[str, int]


def lag_limit(profile: str | None) -> int:
    return LAG_LIMITS.get(profile or "", DEFAULT_LAG_LIMIT)


@dataclass(frozen=True)
class Partition:
    """A partition as one metadata read shows it (the roll's gates read the same)."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int


@dataclass(frozen=True)
class ConsumerPosition:
    """Where a declared consumer is: a consumer group's committed offsets, a Spark consumer's checkpoint, or a
    share group's start offsets and Kafka's own count of what it has not acknowledged."""

    name: str
    kind: str  # "spark", "group" or "share"
    topics: tuple[str, ...]
    #: Next offset to read per partition (a share group's start offset); None: never started (no checkpoint, no
    #: committed offsets, no share state).
    positions: Mapping[TopicPartition, int] | None
    limit: int
    #: The records behind per partition as Kafka counts them (share groups: in-flight records included); None:
    #: measured from `positions` to the end offsets.
    lags: Mapping[TopicPartition, int] | None = None


#: How each kind of consumer is named in status lines and problems.
KINDS = {"spark": "Spark consumer", "group": "consumer group", "share": "share group"}


@dataclass(frozen=True)
class Observed:
    """What one look at the cluster found (kafka.status gathers it)."""

    brokers: tuple[int, ...]
    #: The quorum leader (in KRaft, the active controller) and each voter's catch-up delay (ms); empty when
    #: DescribeQuorum failed.
    quorum_leader: int
    voters_behind_ms: Mapping[int, int]
    partitions: tuple[Partition, ...]
    min_isr: Mapping[str, int]
    consumers: tuple[ConsumerPosition, ...]
    end_offsets: Mapping[TopicPartition, int]
    #: What could not be read, with why (a lag without end offsets is unknown, not zero).
    unread: tuple[str, ...] = ()
    #: Registered brokers whose listener refuses connections (id -> host:port): down, though the controller
    #: has not fenced them yet (it waits broker.session.timeout.ms, 9 s by default).
    unreachable: Mapping[int, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TopicStatus:
    name: str
    partitions: int
    under_replicated: tuple[int, ...]
    under_min_isr: tuple[int, ...]
    offline: tuple[int, ...]
    missing: bool = False


@dataclass(frozen=True)
class ConsumerStatus:
    name: str
    kind: str
    lag: int | None
    limit: int
    partitions: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ConnectorStatus:
    """A declared (or running, undeclared) connector against its declared state: `state` is Connect's word, or
    "absent"; `declared` is None for a connector no spec declares."""

    cluster: str
    name: str
    declared: str | None
    state: str
    tasks: tuple[tuple[int, str, str], ...] = ()

    @property
    def failed_tasks(self) -> int:
        return sum(1 for t in self.tasks if t[1] == FAILED)

    @property
    def as_declared(self) -> bool:
        return self.state == self.declared and not self.failed_tasks

    def line(self) -> str:
        """`name: state (declared state); task 0 running, ...`, as both status commands print it."""
        tasks = ", ".join(f"task {t[0]} {t[1]}" for t in self.tasks)
        declared = "not declared" if self.declared is None else f"declared {self.declared}"
        return f"{self.name}: {self.state} ({declared})" + (f"; {tasks}" if tasks else "")


@dataclass(frozen=True)
class ConnectSeen:
    """One look at a Connect cluster's workers: how many run, and what their REST API reports (None: it could not
    be read, `why` says why)."""

    spec: ConnectSpec
    workers_running: int
    connectors: Mapping[str, LiveConnector] | None
    why: str = ""


def assess_connect(seen: ConnectSeen) -> tuple[list[ConnectorStatus], list[str]]:
    """Each declared connector against its state, each task that failed (its trace's first line and root cause),
    workers missing, and connectors running that no spec declares."""
    spec = seen.spec
    statuses: list[ConnectorStatus] = []
    problems: list[str] = []
    if seen.workers_running < spec.workers:
        problems.append(f"Connect cluster {spec.name}: {seen.workers_running} of {spec.workers} worker(s) running "
                        f"(`kraftform connect up` starts the others)")
    if seen.connectors is None:
        problems.append(f"Connect cluster {spec.name}: its connectors cannot be read: {seen.why}")
        return statuses, problems
    for c in spec.connectors:
        found = seen.connectors.get(c.name)
        status = ConnectorStatus(spec.name, c.name, c.state, found.state if found else "absent",
                                 found.tasks if found else ())
        statuses.append(status)
        if found is None:
            problems.append(f"connector {spec.name}/{c.name} is declared {c.state} but absent "
                            f"(`kraftform connect apply` creates it)")
        elif found.state != c.state:
            problems.append(f"connector {spec.name}/{c.name} is {found.state}, declared {c.state}")
        problems += [f"connector {spec.name}/{c.name}: task {task} failed: {trace}"
                     for task, state, trace in status.tasks if state == FAILED]
    for name in sorted(set(seen.connectors) - {c.name for c in spec.connectors}):
        found = seen.connectors[name]
        statuses.append(ConnectorStatus(spec.name, name, None, found.state, found.tasks))
        problems.append(f"connector {spec.name}/{name} is {found.state} but no spec declares it")
    return statuses, problems


@dataclass(frozen=True)
class Status:
    cluster: str
    brokers: tuple[int, ...]
    declared_brokers: tuple[int, ...]
    controllers: tuple[int, ...]
    declared_controllers: tuple[int, ...]
    quorum_leader: int
    topics: tuple[TopicStatus, ...]
    consumers: tuple[ConsumerStatus, ...]
    problems: tuple[str, ...]
    connectors: tuple[ConnectorStatus, ...] = ()
    #: What was not looked at, and why (not a problem: kraftform could not know).
    notes: tuple[str, ...] = ()

    @property
    def healthy(self) -> bool:
        return not self.problems


def _ids(ids: object) -> str:
    return ", ".join(str(i) for i in sorted(ids))  # type: ignore[call-overload]


def _hosts_lost(topo: Topology, down: set[int], voters_known: bool) -> list[str]:
    """A host none of whose nodes answers, named as the host it is (its engine, its link or the machine); with
    the quorum unread, judged by its brokers alone."""
    placed = node_hosts(topo.cluster)
    out = []
    for host in topo.cluster.hosts:
        nodes = [n for n in topo.nodes if placed.get(n.name) == host and (voters_known or n.is_broker)]
        if nodes and all(n.node_id in down for n in nodes):
            out.append(f"host {host.name} ({host.address}) is lost: none of its {len(nodes)} node(s) answer "
                       f"({', '.join(n.name for n in nodes)}); its machine, its Docker engine or its network is down")
    return out


def _nodes(topo: Topology, seen: Observed) -> list[str]:
    problems = []
    declared = {n.node_id for n in topo.brokers}
    missing = sorted(declared - set(seen.brokers))
    if missing:
        names = ", ".join(f"{n.name} (node {n.node_id})" for n in topo.brokers if n.node_id in missing)
        problems.append(f"broker{'s' if len(missing) > 1 else ''} {names} not registered: "
                        f"{len(seen.brokers)} of {len(declared)} declared brokers up")
    for broker, address in sorted(seen.unreachable.items()):
        name = next((n.name for n in topo.brokers if n.node_id == broker), f"node {broker}")
        problems.append(f"broker {name} (node {broker}) is registered but does not answer at {address}")
    extra = sorted(set(seen.brokers) - declared)
    if extra:
        problems.append(f"broker{'s' if len(extra) > 1 else ''} {_ids(extra)} registered but not declared")
    problems += [f"could not read {what}" for what in seen.unread]
    if not seen.voters_behind_ms:
        return problems + _hosts_lost(topo, {*missing, *seen.unreachable}, False)
    if seen.quorum_leader < 0:
        problems.append("the controller quorum has no leader")
    behind = {v: ms for v, ms in seen.voters_behind_ms.items() if ms > VOTER_BEHIND_MS}
    for voter, ms in sorted(behind.items()):
        name = next((n.name for n in topo.controllers if n.node_id == voter), f"node {voter}")
        since = "never" if ms >= 2**31 else f"{ms / 1000:.0f} s ago"
        problems.append(f"controller {name} (voter {voter}) is not caught up with the quorum leader "
                        f"{seen.quorum_leader}: last caught up {since} (down or behind)")
    voters = set(seen.voters_behind_ms)
    problems += _hosts_lost(topo, {*missing, *seen.unreachable, *behind}, True)
    if len(voters) - len(behind) < len(voters) // 2 + 1:
        problems.append(f"only {len(voters) - len(behind)} of {len(voters)} voters are caught up: the quorum has "
                        f"lost its majority and metadata cannot change")
    declared_controllers = {n.node_id for n in topo.controllers}
    if declared_controllers and voters and voters != declared_controllers:
        problems.append(f"the quorum's voters ({_ids(voters)}) are not the declared controllers "
                        f"({_ids(declared_controllers)})")
    return problems


def _topics(declared: Mapping[str, int], seen: Observed) -> tuple[list[TopicStatus], list[str]]:
    by_topic: dict[str, list[Partition]] = {}
    for p in seen.partitions:
        by_topic.setdefault(p.topic, []).append(p)
    topics, problems = [], []
    for name, default_min in sorted(declared.items()):
        parts = sorted(by_topic.get(name, []), key=lambda p: p.partition)
        if not parts:
            topics.append(TopicStatus(name, 0, (), (), (), missing=True))
            problems.append(f"topic {name} is declared but does not exist (kraftform apply creates it)")
            continue
        minimum = seen.min_isr.get(name, default_min)
        offline = tuple(p.partition for p in parts if p.leader < 0)
        # A replica on a broker that does not answer is as good as out of the ISR, before the controller says so.
        under = tuple(p.partition for p in parts if p.leader >= 0 and (
            len(p.isr) < len(p.replicas) or set(p.isr) & set(seen.unreachable)))
        under_min = tuple(p.partition for p in parts if p.leader >= 0 and len(p.isr) < minimum)
        topics.append(TopicStatus(name, len(parts), under, under_min, offline))
        if offline:
            problems.append(f"topic {name}: {len(offline)} partition(s) offline, no leader "
                            f"({_ids(offline)}): nobody can read or write them")
        if under_min:
            problems.append(f"topic {name}: {len(under_min)} partition(s) below min.insync.replicas={minimum} "
                            f"({_ids(under_min)}): acks=all producers are refused")
        if under:
            problems.append(f"topic {name}: {len(under)} partition(s) under-replicated ({_ids(under)})")
    return topics, problems


def _consumers(seen: Observed) -> tuple[list[ConsumerStatus], list[str]]:
    statuses, problems = [], []
    for c in seen.consumers:
        if c.lags is not None:
            lags = {f"{t}[{p}]": behind for (t, p), behind in sorted(c.lags.items())}
        elif c.positions is None or not seen.end_offsets:
            statuses.append(ConsumerStatus(c.name, c.kind, None, c.limit))
            continue
        else:
            lags = {f"{t}[{p}]": max(0, end - c.positions.get((t, p), 0))
                    for (t, p), end in sorted(seen.end_offsets.items()) if t in c.topics}
        lag = sum(lags.values())
        statuses.append(ConsumerStatus(c.name, c.kind, lag, c.limit, lags))
        if lag > c.limit:
            problems.append(f"{KINDS[c.kind]} {c.name} is {lag:,} records behind on {', '.join(c.topics)} "
                            f"(its limit: {c.limit:,})")
    return statuses, problems


def assess(topo: Topology, declared_topics: Mapping[str, int], seen: Observed,
           connect: tuple[ConnectSeen, ...] = (), notes: tuple[str, ...] = ()) -> Status:
    """The cluster as seen against the specs; `declared_topics` maps each declared topic to the
    min.insync.replicas it should have when the broker did not say; `connect`, the Connect clusters looked at."""
    topics, topic_problems = _topics(declared_topics, seen)
    consumers, consumer_problems = _consumers(seen)
    connectors: list[ConnectorStatus] = []
    connect_problems: list[str] = []
    for one in connect:
        found, problems = assess_connect(one)
        connectors += found
        connect_problems += problems
    return Status(topo.cluster.name, tuple(sorted(seen.brokers)), tuple(n.node_id for n in topo.brokers),
                  tuple(sorted(seen.voters_behind_ms)), tuple(n.node_id for n in topo.controllers),
                  seen.quorum_leader, tuple(topics), tuple(consumers),
                  tuple(_nodes(topo, seen) + topic_problems + consumer_problems + connect_problems),
                  tuple(connectors), notes)


def render_text(status: Status) -> str:
    lines = [f"cluster {status.cluster}: {'healthy' if status.healthy else 'NOT healthy'}",
             f"brokers: {len(status.brokers)} of {len(status.declared_brokers)} declared registered "
             f"({_ids(status.brokers) or 'none'})",
             f"controllers: {len(status.controllers)} of {len(status.declared_controllers)} declared voting "
             f"({_ids(status.controllers) or 'unknown'}), active controller (quorum leader) {status.quorum_leader}"]
    healthy_topics = sum(1 for t in status.topics if not (t.missing or t.offline or t.under_replicated
                                                          or t.under_min_isr))
    lines.append(f"topics: {healthy_topics} of {len(status.topics)} declared fully replicated")
    for c in status.consumers:
        what = " not acknowledged" if c.kind == "share" else ""
        lag = "not started" if c.lag is None else f"lag {c.lag:,} records{what} (limit {c.limit:,})"
        lines.append(f"{KINDS[c.kind]} {c.name}: {lag}")
    lines += [f"connector {k.cluster}/{k.line()}" for k in status.connectors]
    lines += [f"note: {n}" for n in status.notes]
    lines += [f"PROBLEM: {p}" for p in status.problems]
    return "\n".join(lines)
