"""The cluster section against the nodes a runtime started: which nodes to add, restart or remove, in which
order, and why. Pure.

A runtime records what each node was started with (its rendered `server.properties`, heap and Kafka version).
Rendering the specs again, with the cluster's own secrets, and comparing node by node is what makes every field
of the cluster section declarative: a setting, a heap, a rack, the broker count and the Kafka version all show
up as the nodes they touch, never as a silent no-op. Read-only settings take effect only at start, so a
changed node is restarted; a restart goes through the roll's gates (`runtime.nodes.rolling`), one node at a time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from kraftform.cluster.topology import Node
from kraftform.plan.state import ClusterState

#: Settings whose values are long lists; a plan shows that they changed, not both lists in full.
_LONG = 80

if TYPE_CHECKING:  # rendering makes certificates (cryptography): a plan only compares what was rendered
    from kraftform.cluster.render import RenderedNode


class Step(StrEnum):
    ADD = "add"  # format and start a new node (a broker then receives partitions)
    RESTART = "restart"  # stop and start with its new configuration, through the gates
    REMOVE = "remove"  # drain its partitions, stop it, unregister it


@dataclass(frozen=True)
class RunningNode:
    """What a runtime recorded of a node it started. `properties` None: started by a kraftform that did not
    record them, so nothing can be compared."""

    name: str
    node_id: int
    roles: tuple[str, ...]
    properties: Mapping[str, str] | None
    heap_bytes: int | None
    kafka_version: str


@dataclass(frozen=True)
class Difference:
    key: str  # a server.properties key, or `heap` or `kafka_version`
    running: str | None
    wanted: str | None

    def __str__(self) -> str:
        return f"{self.key}: {_shown(self.running)} -> {_shown(self.wanted)}"


@dataclass(frozen=True)
class NodeStep:
    step: Step
    node: Node
    #: What differs, for a restart; empty for an addition or removal.
    differences: tuple[Difference, ...] = ()

    @property
    def summary(self) -> str:
        if self.step is Step.RESTART:
            shown = "; ".join(map(str, self.differences[:3]))
            return f"restart {self.node.name} ({shown}{'; ...' if len(self.differences) > 3 else ''})"
        return f"{self.step} {self.node.name}"


@dataclass(frozen=True)
class NodePlan:
    steps: tuple[NodeStep, ...] = ()
    #: Differences kraftform will not make to running nodes, each a sentence saying why.
    refused: tuple[str, ...] = ()

    def of(self, step: Step) -> tuple[NodeStep, ...]:
        return tuple(s for s in self.steps if s.step is step)

    @property
    def empty(self) -> bool:
        return not self.steps and not self.refused


def _shown(value: str | None) -> str:
    if value is None:
        return "(unset)"
    return value if len(value) <= _LONG else value[:_LONG - 3] + "..."


def differences(running: RunningNode, wanted: RenderedNode, kafka_version: str) -> tuple[Difference, ...]:
    """Every way the node as started differs from the node as rendered now."""
    assert running.properties is not None
    found = []
    if running.kafka_version != kafka_version:
        found.append(Difference("kafka_version", running.kafka_version, kafka_version))
    if running.heap_bytes is not None and running.heap_bytes != wanted.node.heap_bytes:
        found.append(Difference("heap", f"{running.heap_bytes // 2**20} MiB", f"{wanted.node.heap_bytes // 2**20} MiB"))
    for key in sorted(set(running.properties) | set(wanted.properties)):
        old, new = running.properties.get(key), wanted.properties.get(key)
        if old != new:
            found.append(Difference(key, old, new))
    return tuple(found)


STATIC_QUORUM = ("which this cluster's static voter list (controller.quorum.voters) cannot do; clusters kraftform "
                 "makes now can (KIP-853's dynamic quorum), this one was made before: keep `controllers` as it runs")


#: Settings whose change on running nodes locks someone out during a roll: the admin's SCRAM credential is made for
#: one name and one mechanism when a cluster is formatted, and each restarted node would refuse what the others
#: still accept (a controller listener switching between SSL and SASL_SSL splits the quorum the same way).
LOCKOUT = {
    "super.users": "the super users (security.admin_user or security.controller_auth)",
    "sasl.enabled.mechanisms": "the SASL mechanism of the client listeners (security.sasl_mechanism)",
    "listener.security.protocol.map": "a listener's security protocol (security.controller_auth)",
}
LOCKOUT_STEPS = ("keep the running value in the specs; to change it, make a new cluster with it (`kraftform cluster "
                 "up` with another --state-dir, or another stack), apply the same specs there and move the clients "
                 "over: a migration in place is not supported")


def _protocols(value: str | None) -> dict[str, str]:
    return dict(entry.split(":", 1) for entry in (value or "").split(",") if ":" in entry)


def locks_out(difference: Difference) -> bool:
    """Whether restarting a node with this difference refuses kraftform's own login or its peers' (adding a
    listener is not: only a listener that keeps its name and changes its protocol)."""
    if difference.key == "listener.security.protocol.map":
        old, new = _protocols(difference.running), _protocols(difference.wanted)
        return any(old[name] != new[name] for name in old.keys() & new.keys())
    return difference.key in LOCKOUT


def lockouts(steps: Sequence[NodeStep]) -> list[str]:
    """A refusal, with the steps a user takes, per setting whose change would lock someone out."""
    found: dict[str, Difference] = {}
    for step in steps:
        for d in step.differences:
            if locks_out(d):
                found.setdefault(d.key, d)
    return [f"{LOCKOUT[key]} would change on a running cluster ({d}): each node restarted with it would refuse "
            f"what the others still accept, kraftform's own login first; {LOCKOUT_STEPS}" for key, d in found.items()]


def node_plan(running: Sequence[RunningNode], wanted: Sequence[RenderedNode], kafka_version: str,
              dynamic_quorum: bool = False) -> NodePlan:
    """What to do to the running nodes so that they are the wanted ones. Controllers join or leave only a quorum
    that can change (`dynamic_quorum`)."""
    now = {r.name: r for r in running}
    then = {w.node.name: w for w in wanted}
    steps: list[NodeStep] = []
    refused: list[str] = []
    for name, w in then.items():
        if name in now:
            continue
        if w.node.is_controller and not dynamic_quorum:
            refused.append(f"{name}: adding a controller changes the controller quorum, {STATIC_QUORUM}")
        else:
            steps.append(NodeStep(Step.ADD, w.node))
    for name, r in now.items():
        if name in then:
            continue
        node = Node(r.node_id, name, tuple(r.roles), heap_bytes=r.heap_bytes or 0)  # type: ignore[arg-type]
        if node.is_controller and not dynamic_quorum:
            refused.append(f"{name}: removing a controller changes the controller quorum, {STATIC_QUORUM}")
        elif node.is_controller and node.is_broker:
            refused.append(f"{name}: a combined node cannot leave the quorum and stay a broker; keep `controllers`")
        else:
            steps.append(NodeStep(Step.REMOVE, node))
    for name in sorted(set(now) & set(then)):
        r, w = now[name], then[name]
        if sorted(r.roles) != sorted(w.node.roles):
            refused.append(f"{name}: its roles cannot change in place ({', '.join(r.roles)} -> "
                           f"{', '.join(w.node.roles)})")
            continue
        if r.properties is None:
            refused.append(f"{name}: started by an earlier kraftform that did not record its configuration, so "
                           f"kraftform cannot tell what would change; replace the cluster to manage its nodes")
            continue
        found = differences(r, w, kafka_version)
        if found:
            steps.append(NodeStep(Step.RESTART, w.node, found))
    return NodePlan(tuple(steps), tuple(refused + lockouts(steps)))


def roll_order(restarts: Sequence[NodeStep], active_controller: int | None) -> tuple[NodeStep, ...]:
    """Strimzi's order: controllers that do not lead the quorum first, the active controller last among them
    (one leader election, not one per restart), then the brokers; node id order within each group."""

    def rank(s: NodeStep) -> tuple[int, int]:
        if s.node.is_controller:
            return (1 if s.node.node_id == active_controller else 0), s.node.node_id
        return 2, s.node.node_id

    return tuple(sorted(restarts, key=rank))


def ordered(plan: NodePlan, active_controller: int | None) -> tuple[NodeStep, ...]:
    """The order apply carries the steps out in: new brokers first (so that partitions have somewhere to go and
    a roll has spare capacity), then the roll, then removals (after their partitions moved away)."""
    return (plan.of(Step.ADD) + roll_order(plan.of(Step.RESTART), active_controller)
            + tuple(sorted(plan.of(Step.REMOVE), key=lambda s: s.node.node_id)))



def unprotected(state: ClusterState) -> list[str]:
    """Topics no roll can keep writable for acks=all producers: with min.insync.replicas at or above their
    replication factor, the restart of any broker holding one of their replicas takes them below it, so the
    may-stop gate leaves them out (as Strimzi's does) instead of waiting forever. Each named with the reason. Of
    the topics whose settings were read (those a plan manages) and every topic with one replica."""
    found = []
    for name, topic in sorted(state.topics.items()):
        if name.startswith("__"):
            continue
        minimum = int(topic.config.get("min.insync.replicas") or state.default_of("min.insync.replicas") or 1)
        if minimum >= topic.replication_factor:
            found.append(f"{name} (replicas {topic.replication_factor}, min.insync.replicas {minimum})")
    return found


def unprotected_note(state: ClusterState) -> str:
    """The plan's note naming them, when a roll is planned; "" when there are none."""
    found = unprotected(state)
    if not found:
        return ""
    shown = ", ".join(found[:10]) + (f" and {len(found) - 10} more" if len(found) > 10 else "")
    return (f"{len(found)} topic(s) unprotected during the roll: min.insync.replicas is not below their replicas, "
            f"so acks=all writes to them fail while a broker holding one of their replicas restarts, and the gate "
            f"cannot wait for them: {shown}")
