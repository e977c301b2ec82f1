"""Changing a running cluster's nodes: new brokers started and given partitions, changed nodes rolled one at a
time through the health gates (`kafka.gates`), leaving brokers drained, stopped and unregistered.

Both runtimes do the single-node work (`Nodes`); everything that decides, waits and checks is here, once. A
node that does not come back with its new configuration is started again with its previous one and the roll
stops there, every node after it untouched, with the node's own last error. The runtime records each node's
configuration as it starts it, so an interrupted roll resumes where it stopped: the next plan holds only the
nodes that still differ.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

from confluent_kafka import KafkaException

from kraftform.cluster.connection import Connection
from kraftform.cluster.identity import MAPPING_KEY, MOVING_MAPPING
from kraftform.cluster.render import RenderedNode
from kraftform.cluster.topology import Node, Role, topology
from kraftform.errors import (
    ClusterUnhealthy,
    ConnectionFailed,
    HostUnreachable,
    KafkaRequestFailed,
    KraftformError,
    PlanRefusedError,
)
from kraftform.kafka import gates
from kraftform.kafka.apply import Applier, ApplyOptions
from kraftform.monitoring.status import Partition as ReadPartition
from kraftform.plan.changes import Action, Change, Kind, Reassignment, Safety
from kraftform.plan.nodes import NodePlan, NodeStep, Step, ordered, roll_order
from kraftform.plan.placement import (
    DEFAULT_THROTTLE,
    Moves,
    PlacementRefused,
    describe_moves,
    estimate_moves,
    reassignment_batches,
    target_assignment,
)
from kraftform.runtime.nodes import deployment as dep
from kraftform.runtime.nodes.tools import CLUSTER_TOOL, METADATA_QUORUM, run_kafka_tool
from kraftform.specset.model import ClusterSpec
from kraftform.waiting import NotYet, poll

Progress = Callable[[str], None]
#: Set in the deployment while partitions still have to move after brokers were added or removed.
REBALANCE_PENDING = "rebalance_pending"
#: Set in the deployment to the node a roll is about to stop, cleared once it is back (or reverted): where an
#: interrupted roll stopped, checked first by the next apply.
ROLLING = "rolling"


class Nodes(Protocol):
    """What a runtime does to single nodes; `LocalRuntime` and `DockerRuntime` both do it."""

    state_dir: Path

    def rendered(self, cluster: ClusterSpec, keep_new_keys: bool = False) -> tuple[RenderedNode, ...]: ...
    def node_plan(self, cluster: ClusterSpec) -> NodePlan | None: ...
    def process_id(self, name: str) -> str: ...
    def replace_node(self, cluster: ClusterSpec, rendered: RenderedNode) -> None: ...
    def revert_node(self, name: str) -> None: ...
    def settle_node(self, name: str) -> None: ...
    def add_node(self, cluster: ClusterSpec, rendered: RenderedNode) -> None: ...
    def remove_node(self, name: str, purge: bool) -> None: ...
    def last_error(self, name: str) -> str: ...
    def set_bootstrap(self, cluster: ClusterSpec) -> None: ...
    def start_node(self, name: str) -> None: ...


class RollHalted(ClusterUnhealthy):
    """A node did not come back, or a gate did not open in time; the roll stopped there."""


@dataclass(frozen=True)
class RollOptions:
    #: How long a node may take to be back and the cluster whole again.
    node_timeout_s: float = 300.0
    #: How long to wait for a gate before a node stops (a partition at min.insync.replicas, a voter behind).
    gate_timeout_s: float = 300.0
    throttle_bytes_per_s: int = DEFAULT_THROTTLE
    #: Partitions per reassignment batch while replicas move.
    batch_partitions: int = 200
    #: Delete a removed broker's data (its directory or volume); only with --allow-destructive.
    purge_removed: bool = False


@dataclass(frozen=True)
class LostHost:
    """A host whose Docker engine does not answer, and the recorded nodes on it: their state is unknown."""

    host: str
    why: str
    nodes: tuple[str, ...]


@dataclass(frozen=True)
class ClusterWork:
    """Node work of one cluster, in the order apply carries it out, for the plan and for `carry_out`."""

    steps: tuple[NodeStep, ...] = ()
    refused: tuple[str, ...] = ()
    #: Partitions still have to move after an earlier, interrupted resize.
    rebalance_pending: bool = False
    active_controller: int | None = None
    #: What the partition moves would be, as far as the cluster can be read now.
    estimate: Moves | None = None
    #: The per-broker replication throttle the moves' time is estimated at.
    throttle_bytes_per_s: int = DEFAULT_THROTTLE
    #: Voters no declared controller is (a removal interrupted after the node stopped): taken out of the quorum.
    stray_voters: tuple[int, ...] = ()
    #: Nodes an interrupted roll was restarting: checked first (kept if back, else started as they were).
    in_progress: tuple[str, ...] = ()
    #: Partitions a reassignment is moving now (another tool's, or an interrupted apply's): the moves wait.
    reassigning: tuple[str, ...] = ()
    #: Declared, recorded nodes whose process or container is not running (crashed, killed, stopped by hand):
    #: started again with their data and configuration before anything else.
    stopped: tuple[str, ...] = ()
    #: Hosts that did not answer: no node work is done while one is lost (a roll or a move needs every replica).
    lost_hosts: tuple[LostHost, ...] = ()

    @property
    def to_do(self) -> bool:
        """Anything for `carry_out`."""
        return bool(self.steps or self.stray_voters or self.in_progress or self.stopped) or self.moves_partitions

    @property
    def moves_partitions(self) -> bool:
        """Brokers join or leave (now, or in an earlier apply that was interrupted before the moves)."""
        return self.rebalance_pending or any(s.step is not Step.RESTART and s.node.is_broker for s in self.steps)

    def changes(self, cluster: ClusterSpec) -> list[Change]:
        """The plan's rendering of the work: a change per differing setting of each node to restart (with its
        place in the roll), one per node added or removed, and the partition moves."""
        out = [Change(Action.UPDATE, Kind.CLUSTER, f"host {h.host}", Safety.SAFE,
                      f"{h.why}: whether its nodes ({', '.join(h.nodes)}) run is unknown, and the node work below "
                      f"waits until it answers; the rest of the plan is applied without it", "engine",
                      "not answering", "answering") for h in self.lost_hosts]
        out += [Change(Action.UPDATE, Kind.CLUSTER, name, Safety.SAFE,
                       "declared and not running (its process or container is gone: crashed, killed or stopped "
                       "outside kraftform): started again with its data and configuration as they are, before any "
                       "other node work", "running", "stopped", "running") for name in self.stopped]
        out += [Change(Action.UPDATE, Kind.CLUSTER, name, Safety.DISRUPTIVE,
                       "an earlier roll was interrupted while restarting this node: it is checked first, kept if it "
                       "is back with its new configuration, else started again with its previous one (and the apply "
                       "stops there, naming its error)", "roll", "interrupted", "checked") for name in self.in_progress]
        restarts = [s for s in self.steps if s.step is Step.RESTART]
        for number, s in enumerate(restarts, 1):
            role = ("active controller" if s.node.node_id == self.active_controller else
                    "controller" if s.node.is_controller else "broker")
            why = (f"rolling restart {number}/{len(restarts)} ({role} {s.node.node_id}): read at start; it stops only "
                   f"when no partition would fall below min.insync.replicas and the voters keep a majority, and the "
                   f"next node waits until it is back and nothing is under-replicated")
            out += [Change(Action.UPDATE, Kind.CLUSTER, s.node.name, Safety.DISRUPTIVE, why, d.key, d.running,
                           d.wanted, s) for d in s.differences]
        for s in self.steps:
            if s.step is Step.ADD and s.node.is_controller:
                out.append(Change(Action.CREATE, Kind.CLUSTER, s.node.name, Safety.SAFE,
                                  "a new controller: formatted without voters, started as an observer of the quorum, "
                                  "it joins the voters by itself once caught up (KIP-853)", "node", None,
                                  f"controller {s.node.node_id}", s))
            elif s.step is Step.REMOVE and s.node.is_controller:
                out.append(Change(Action.DELETE, Kind.CLUSTER, s.node.name, Safety.DESTRUCTIVE,
                                  "stopped once the other voters keep a caught-up majority, then taken out of the "
                                  "voters (kafka-metadata-quorum remove-controller); its data is deleted", "node",
                                  f"controller {s.node.node_id}", None, s))
            elif s.step is Step.ADD:
                out.append(Change(Action.CREATE, Kind.CLUSTER, s.node.name, Safety.SAFE,
                                  f"a new broker{f' in rack {s.node.rack}' if s.node.rack else ''}: formatted with the "
                                  f"cluster's id, started, then partitions move onto it", "node", None,
                                  f"broker {s.node.node_id}", s))
            elif s.step is Step.REMOVE:
                out.append(Change(Action.DELETE, Kind.CLUSTER, s.node.name, Safety.DESTRUCTIVE,
                                  "its replicas move to the other brokers first (refused, naming the topics, when they "
                                  "cannot hold every replication factor and rack spread), then it stops, is "
                                  "unregistered and its data is deleted", "node", f"broker {s.node.node_id}", None, s))
        if self.moves_partitions:
            moves = self.estimate
            shown = (describe_moves(moves, self.throttle_bytes_per_s) if moves is not None else
                     f"{len(self.reassigning)} partition(s) are being reassigned now ({_some(self.reassigning)}): "
                     f"apply waits until that ends, then computes the moves" if self.reassigning else
                     "the moves are computed once the new brokers run")
            out.append(Change(Action.UPDATE, Kind.CLUSTER, cluster.name, Safety.DISRUPTIVE,
                              f"{shown}: replicas move (throttled, in batches) until every broker holds within one "
                              f"replica of the brokers it can trade with without narrowing a rack spread; preferred "
                              f"leaders are then evened out and elected", "partitions", None, "balanced"))
        out += [Change(Action.DELETE, Kind.CLUSTER, f"voter {voter}", Safety.DISRUPTIVE,
                       "a controller voter that no declared, running controller is (its removal was interrupted after "
                       "the node stopped): taken out of the quorum", "voter", str(voter), None)
                for voter in self.stray_voters]
        out += [Change(Action.REFUSE, Kind.CLUSTER, cluster.name, Safety.DISRUPTIVE, why) for why in self.refused]
        return out


def cluster_work(runtime: Nodes, cluster: ClusterSpec, connection: Connection,
                 throttle_bytes_per_s: int = DEFAULT_THROTTLE) -> ClusterWork:
    """The node work between the running cluster and its specs (the moves' time estimated at the throttle)."""
    plan = runtime.node_plan(cluster)
    if plan is None:
        dep.load_secrets(runtime.state_dir)  # raises, saying why
        raise AssertionError("unreachable")
    if plan.refused:  # refused before any login: a lock-out refused is one the connection may already meet
        return ClusterWork(plan.steps, plan.refused)
    quorum = _quorum(connection)
    active = quorum.leader if quorum else None
    deployment = dep.load(runtime.state_dir)
    pending = REBALANCE_PENDING in deployment.extra
    declared = {n.node_id for n in topology(cluster).controllers}  # ids need no rendering (nor new keys)
    leaving = {s.node.node_id for s in plan.steps if s.step is Step.REMOVE}
    dynamic = dep.load_secrets(runtime.state_dir).dynamic_quorum
    strays = tuple(sorted(set(quorum.behind_ms) - declared - leaving)) if quorum and dynamic else ()
    in_progress = interrupted(deployment)
    stopped: list[str] = []
    lost: dict[str, LostHost] = {}
    for r in deployment.nodes:
        if r.name in in_progress or r.node_id in leaving:
            continue
        try:
            if not runtime.process_id(r.name):
                stopped.append(r.name)
        except HostUnreachable as exc:
            held = lost.get(exc.host, LostHost(exc.host, str(exc), ()))
            lost[exc.host] = dataclasses.replace(held, nodes=(*held.nodes, r.name))
    work = ClusterWork(ordered(plan, active), plan.refused, pending, active, stray_voters=strays,
                       in_progress=in_progress, stopped=tuple(stopped), throttle_bytes_per_s=throttle_bytes_per_s,
                       lost_hosts=tuple(lost.values()))
    if not work.moves_partitions:
        return work
    try:
        moving = tuple(gates.reassigning(connection))
    except KraftformError:
        moving = ()  # an estimate, not a gate: `rebalance` reads them again and waits
    if moving:
        return dataclasses.replace(work, reassigning=moving)
    try:
        return dataclasses.replace(work, estimate=_estimate(connection, work, cluster.placement.even_topics))
    except PlacementRefused as exc:
        return dataclasses.replace(work, refused=(*work.refused, f"the brokers cannot be removed: {exc}"))


def waiting_text(work: ClusterWork) -> str:
    """What node work waits for, and why."""
    return "node work waits for " + "; ".join(h.why for h in work.lost_hosts)


def interrupted(deployment: dep.Deployment) -> tuple[str, ...]:
    """The running nodes a roll was restarting when it stopped: marked before the stop, or replaced and neither
    settled nor reverted."""
    marked = {deployment.extra[ROLLING]} if deployment.extra.get(ROLLING) else set()
    return tuple(sorted((marked | set(deployment.previous)) & {r.name for r in deployment.nodes}))


def _estimate(connection: Connection, work: ClusterWork, even_topics: bool) -> Moves | None:
    """The moves `rebalance` would make were the added brokers running and the removed ones leaving, and what
    the other `placement.even_topics` setting would move; None when the cluster cannot be read for it now (the
    plan says the moves are computed when they are made). Raises PlacementRefused when the staying brokers
    cannot hold the partitions."""
    try:
        admin = gates.client(connection)
        racks = gates.broker_racks(admin)
        racks |= {s.node.node_id: s.node.rack for s in work.steps if s.step is Step.ADD}
        leaving = {s.node.node_id for s in work.steps if s.step is Step.REMOVE}
        partitions = [p for p in gates.read_partitions(admin) if p.topic != "__cluster_metadata"]
    except KraftformError:  # an estimate, not a gate: the plan says the moves are computed when made
        return None
    return estimate_moves(_assignment(partitions), racks, leaving, _sizes(connection), even_topics)


def _sizes(connection: Connection) -> dict[tuple[str, int], int]:
    """Each partition's bytes, or none known (the moves are then chosen and shown without them)."""
    try:
        return gates.partition_sizes(connection)
    except Exception:
        return {}


def _some(names: tuple[str, ...] | list[str], shown: int = 5) -> str:
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _quorum(connection: Connection) -> gates.Quorum | None:
    """The quorum, or None when it cannot be read now (the roll order is then by node id; the roll reads the
    leader again itself)."""
    try:
        return gates.read_quorum(connection)
    except KraftformError:  # the quorum is only read for the order
        return None


def _active_controller(connection: Connection) -> int | None:
    quorum = _quorum(connection)
    return quorum.leader if quorum else None


def wait_gate(what: str, timeout: float, check: Callable[[], str | None]) -> None:
    def attempt() -> None:
        reason = check()
        if reason:
            raise NotYet(reason)

    # A request may land on the very node that is restarting: any client's error is a reason to ask again, kraftform's
    # or confluent-kafka's own (the gates' describe_cluster raised it bare, past this wait, as a traceback).
    poll(what, timeout, attempt, interval=1.0,
         retry_on=(ConnectionFailed, KafkaRequestFailed, KafkaException), error=RollHalted)


def carry_out(runtime: Nodes, cluster: ClusterSpec, work: ClusterWork, connection: Connection,
              options: RollOptions, progress: Progress) -> None:
    """Add, roll, rebalance and remove, in that order; raises RollHalted where it stops."""
    if work.refused:
        raise PlanRefusedError("the cluster's nodes cannot be changed as declared; nothing was done:\n" +
                               "\n".join(f"  {r}" for r in work.refused))
    if work.lost_hosts:
        raise ClusterUnhealthy(waiting_text(work))
    for name in work.stopped:
        _start_stopped(runtime, name, connection, options, progress)
    for name in work.in_progress:
        _resume(runtime, name, connection, options, progress)
    rendered = {r.node.name: r for r in runtime.rendered(cluster, keep_new_keys=True)}
    adds = [s for s in work.steps if s.step is Step.ADD]
    removes = [s for s in work.steps if s.step is Step.REMOVE]
    if work.moves_partitions:
        _mark(runtime.state_dir, REBALANCE_PENDING, "1")
    for s in adds:
        started = time.monotonic()
        progress(f"adding {s.node.name} ({_role(s.node)} {s.node.node_id}) ...")
        runtime.add_node(cluster, rendered[s.node.name])
        _wait_back(runtime, s, connection, options)
        progress(f"  {s.node.name} is {'a caught-up voter' if s.node.is_controller else 'registered'} "
                 f"({time.monotonic() - started:.1f} s)")
    if adds:
        runtime.set_bootstrap(cluster)
    restarts = [s for s in work.steps if s.step is Step.RESTART]
    roll(runtime, cluster, restarts, rendered, connection, options, progress)
    if any(d.key == MAPPING_KEY and d.wanted == MOVING_MAPPING for s in restarts for d in s.differences):
        _node_rule_alone(runtime, cluster, connection, options, progress)
    if work.moves_partitions:
        leaving = {s.node.node_id for s in removes if s.node.is_broker}
        _wait_registered(connection, {n.node_id for n in topology(cluster).brokers} - leaving, options)
        rebalance(connection, leaving, options, progress, cluster.placement.even_topics)
    for s in removes:
        progress(f"removing {s.node.name} ({_role(s.node)} {s.node.node_id}) ...")
        if s.node.is_controller:
            wait_gate(f"{s.node.name} to be safe to stop", options.gate_timeout_s,
                      lambda node=s.node: gates.why_not_stop(connection, node))  # type: ignore[misc]
            runtime.remove_node(s.node.name, options.purge_removed)
            remove_voter(runtime.state_dir, s.node.node_id)
        else:
            runtime.remove_node(s.node.name, options.purge_removed)
            _unregister(runtime.state_dir, s.node.node_id)
    for voter in work.stray_voters:
        progress(f"removing controller {voter} from the voters (no node runs it) ...")
        remove_voter(runtime.state_dir, voter)
    if removes or dep.load(runtime.state_dir).brokers != cluster.brokers:
        # Also when an earlier apply was killed between a node's start or stop and this step: the client files
        # and the metrics endpoints would go on naming the brokers as they were.
        runtime.set_bootstrap(cluster)
    if work.moves_partitions:
        _mark(runtime.state_dir, REBALANCE_PENDING, None)


def _node_rule_alone(runtime: Nodes, cluster: ClusterSpec, connection: Connection, options: RollOptions,
                     progress: Progress) -> None:
    """The second roll of a cluster's move onto the node identity (identity.py): every node now presents its node
    certificate and trusts both rules, so each is restarted trusting the node rule alone. A kill before its end
    leaves nodes on both rules, which the next apply's plan shows and rolls."""
    plan = runtime.node_plan(cluster)
    restarts = [s for s in plan.steps if s.step is Step.RESTART] if plan is not None else []
    if not restarts:
        return
    progress("node identity: every node presents its own certificate; restarting each to trust only nodes' ...")
    rendered = {r.node.name: r for r in runtime.rendered(cluster, keep_new_keys=True)}
    roll(runtime, cluster, restarts, rendered, connection, options, progress)


def roll(runtime: Nodes, cluster: ClusterSpec, restarts: list[NodeStep], rendered: Mapping[str, RenderedNode],
         connection: Connection, options: RollOptions, progress: Progress) -> None:
    """Restart each node in turn, in Strimzi's order (the active controller read again now: it may have moved)."""
    if not restarts:
        return
    order = roll_order(restarts, _active_controller(connection))
    for number, s in enumerate(order, 1):
        node = s.node
        label = f"[{number}/{len(order)}] {node.name}"
        progress(f"{label}: waiting until it may stop ...")
        try:
            wait_gate(f"{node.name} to be safe to stop", options.gate_timeout_s,
                       lambda node=node: gates.why_not_stop(connection, node))  # type: ignore[misc]
        except RollHalted as exc:
            raise RollHalted(f"the roll stopped before {node.name}, which was not restarted: {exc}; "
                             f"{_untouched(order[number:])}") from None
        started, since_ms = time.monotonic(), int(time.time() * 1000)
        progress(f"{label}: restarting ({'; '.join(map(str, s.differences[:3]))}) ...")
        _mark(runtime.state_dir, ROLLING, node.name)
        runtime.replace_node(cluster, rendered[node.name])
        try:
            _wait_back(runtime, s, connection, options, since_ms)
        except RollHalted as exc:
            cause = runtime.last_error(node.name)
            progress(f"{label}: not back; starting it again with its previous configuration ...")
            runtime.revert_node(node.name)
            try:
                _wait_back(runtime, s, connection, options, int(time.time() * 1000))
                back = "it was started again with its previous configuration and is back"
            except RollHalted as again:
                back = f"it was started again with its previous configuration, which is not back either: {again}"
            _mark(runtime.state_dir, ROLLING, None)
            raise RollHalted(f"{node.name} did not come back with its new configuration ({exc}); "
                             f"its log's last error: {cause}. {back}. "
                             f"{_untouched(order[number:])}") from None
        runtime.settle_node(node.name)
        _mark(runtime.state_dir, ROLLING, None)
        progress(f"{label}: back in {time.monotonic() - started:.1f} s")


def _recorded_step(runtime: Nodes, name: str) -> NodeStep:
    record = dep.load(runtime.state_dir).node(name)
    return NodeStep(Step.RESTART, Node(record.node_id, name, cast(tuple[Role, ...], tuple(record.roles))))


def _start_stopped(runtime: Nodes, name: str, connection: Connection, options: RollOptions,
                   progress: Progress) -> None:
    """A declared node that is not running, started as it was; the apply stops if it does not come back."""
    started = time.monotonic()
    progress(f"{name}: not running; starting it with its data and configuration as they are ...")
    runtime.start_node(name)
    try:
        _wait_back(runtime, _recorded_step(runtime, name), connection, options, int(time.time() * 1000))
    except RollHalted as exc:
        raise RollHalted(f"{name} was not running and did not come back when started ({exc}); its log's last "
                         f"error: {runtime.last_error(name)}. No other node was changed") from None
    progress(f"{name}: back in {time.monotonic() - started:.1f} s")


def _resume(runtime: Nodes, name: str, connection: Connection, options: RollOptions, progress: Progress) -> None:
    """The node an interrupted roll was restarting: kept if it is back (on whichever configuration it was
    started with), else started again as it ran before the roll, and the apply stops there."""
    step = _recorded_step(runtime, name)
    progress(f"{name}: an earlier roll was interrupted while restarting it; checking it first ...")
    replaced = name in dep.load(runtime.state_dir).previous
    try:
        _wait_back(runtime, step, connection, options)
    except RollHalted as exc:
        if not replaced:
            # Stopped (or still stopping) before its replacement started: started again as it was.
            runtime.start_node(name)
            try:
                _wait_back(runtime, step, connection, options, int(time.time() * 1000))
            except RollHalted as again:
                raise RollHalted(f"{name}, where an earlier roll was interrupted, is not back ({again}); its log's "
                                 f"last error: {runtime.last_error(name)}") from None
            _mark(runtime.state_dir, ROLLING, None)
            progress(f"{name}: started again as it was, and back")
            return
        cause = runtime.last_error(name)
        progress(f"{name}: not back; starting it again with its previous configuration ...")
        runtime.revert_node(name)
        _wait_back(runtime, step, connection, options, int(time.time() * 1000))
        _mark(runtime.state_dir, ROLLING, None)
        raise RollHalted(f"{name} did not come back with its new configuration after the interrupted roll ({exc}); "
                         f"its log's last error: {cause}. It was started again with its previous configuration and "
                         f"is back; no other node was changed") from None
    runtime.settle_node(name)
    _mark(runtime.state_dir, ROLLING, None)
    progress(f"{name}: back")


def _untouched(rest: tuple[NodeStep, ...]) -> str:
    if not rest:
        return "No other node was waiting."
    return f"Not restarted: {', '.join(s.node.name for s in rest)}."


def _wait_back(runtime: Nodes, s: NodeStep, connection: Connection, options: RollOptions, since_ms: int = 0) -> None:
    name = s.node.name
    first = runtime.process_id(name)

    def check() -> str | None:
        now = runtime.process_id(name)
        if not now:
            raise RollHalted(f"{name} exited")  # not worth waiting for: nothing starts a local node again
        if first and now != first:
            # A container's restart policy starts it again after each exit: a crash loop, not a slow start.
            raise RollHalted(f"{name} exited and was started again by its restart policy")
        return gates.why_not_ready(connection, s.node, since_ms)

    wait_gate(f"{name} to be back", options.node_timeout_s, check)


def _mark(state_dir: Path, key: str, value: str | None) -> None:
    """Record (or with None clear) a step in progress in the deployment, before the step."""
    deployment = dep.load(state_dir)
    if value is None and key not in deployment.extra:
        return
    if value is None:
        deployment.extra.pop(key)
    else:
        deployment.extra[key] = value
    dep.save(state_dir, deployment)


def _assignment(partitions: list[ReadPartition]) -> dict[tuple[str, int], tuple[int, ...]]:
    return {(p.topic, p.partition): p.replicas for p in partitions}


def _wait_registered(connection: Connection, brokers: set[int], options: RollOptions) -> None:
    """Until every broker that stays is registered: the moves go to registered brokers only, and one an earlier
    apply started but did not wait for (killed in between) would be left out, empty, the moves called done."""
    def check() -> str | None:
        missing = sorted(brokers - set(gates.broker_racks(gates.client(connection))))
        return f"broker(s) {', '.join(map(str, missing))} not registered yet" if missing else None

    wait_gate("every declared broker to register", options.gate_timeout_s, check)


def rebalance(connection: Connection, leaving: set[int], options: RollOptions, progress: Progress,
              even_topics: bool = False) -> None:
    """Move replicas off leaving brokers and even out the rest, throttled and in batches; then elect preferred
    leaders. Kafka's internal topics move too: they are replicas like any other. A reassignment already in
    flight is waited for first: until it ends, replica lists hold its old and new replicas."""
    moving: list[str] = []

    def settled() -> str | None:
        moving[:] = gates.reassigning(connection)
        return f"{len(moving)} partition(s) are being reassigned ({_some(moving)})" if moving else None

    if settled():
        progress(f"partitions: waiting for the reassignment in flight to end ({_some(moving)}) ...")
        wait_gate("the reassignment in flight to end", options.gate_timeout_s, settled)
    admin = gates.client(connection)
    racks = gates.broker_racks(admin)
    registered = tuple(sorted(racks))
    racks.update(dict.fromkeys(leaving - set(racks)))  # a leaving broker already stopped: its replicas move too
    partitions = [p for p in gates.read_partitions(admin) if p.topic != "__cluster_metadata"]
    try:
        moves = target_assignment(_assignment(partitions), racks, leaving, _sizes(connection), even_topics)
    except PlacementRefused as exc:
        raise PlanRefusedError(f"the brokers cannot be removed: {exc}; nothing was moved") from None
    if moves.targets:
        started = time.monotonic()
        _move(connection, moves, registered, options, progress)
        seconds = time.monotonic() - started
        progress(f"partitions: {moves.bytes_moved / 2**20:.1f} MiB copied in {seconds:.1f} s "
                 f"({moves.bytes_moved / 2**20 / max(seconds, 0.001):.1f} MiB/s; throttle "
                 f"{options.throttle_bytes_per_s / 2**20:.1f} MiB/s per broker)")
    else:
        progress("partitions: replicas already balanced")
    _elect_preferred(admin, progress)


def _move(connection: Connection, moves: Moves, registered: tuple[int, ...], options: RollOptions,
          progress: Progress) -> None:
    """The reassignment in batches of about `batch_partitions` partitions, each throttled and waited for."""
    progress(f"partitions: {describe_moves(moves, options.throttle_bytes_per_s)} ...")
    applier = Applier(connection, {}, ApplyOptions(throttle_bytes_per_s=options.throttle_bytes_per_s), progress)
    for batch in reassignment_batches(moves.targets, options.batch_partitions):
        applier.replication([Change(Action.UPDATE, Kind.REPLICATION, topic, Safety.DISRUPTIVE, "rebalance",
                                    payload=Reassignment(target, registered, first)) for topic, first, target in batch])
    if applier.failures:
        raise KraftformError("replica moves failed: " + "; ".join(map(str, applier.failures)))


def _elect_preferred(admin: Any, progress: Progress) -> None:
    asked, failed = gates.elect_preferred(admin)
    if not asked:
        progress("partitions: every partition is led by its preferred leader")
        return
    if failed:
        progress(f"partitions: preferred leader not elected for {len(failed)} partition(s) (Kafka's own "
                 f"auto.leader.rebalance will): {', '.join(f'{k} {v}' for k, v in sorted(failed.items())[:5])}")
    else:
        progress("partitions: preferred leaders elected")


def _role(node: Node) -> str:
    return "controller" if node.is_controller else "broker"


def remove_voter(state_dir: Path, controller: int) -> None:
    """Take a stopped controller out of the voters (kafka-metadata-quorum remove-controller, through the
    brokers with the admin login, naming it by id and the directory id the quorum knows it by), and wait until
    the quorum no longer counts it."""
    deployment = dep.load(state_dir)
    directory = gates.read_quorum(dep.admin_config(state_dir)).directories.get(controller)
    if directory is None:
        return  # not a voter (any more)
    run_kafka_tool(METADATA_QUORUM, ["--bootstrap-server", deployment.bootstrap, "--command-config",
                                     str(state_dir / "admin.properties"), "remove-controller", "--controller-id",
                                     str(controller), "--controller-directory-id", directory],
                   deployment.kafka_version)
    connection = dep.admin_config(state_dir)
    wait_gate(f"controller {controller} to leave the voters", 60,
              lambda: f"controller {controller} is still a voter"
              if controller in gates.read_quorum(connection).behind_ms else None)


def _unregister(state_dir: Path, broker: int) -> None:
    """Take a stopped broker out of the cluster's metadata (kafka-cluster.sh unregister), once it is fenced."""
    deployment = dep.load(state_dir)

    def attempt() -> None:
        try:
            run_kafka_tool(CLUSTER_TOOL, ["unregister", "--bootstrap-server", deployment.bootstrap,
                                         "--config", str(state_dir / "admin.properties"), "--id", str(broker)],
                           deployment.kafka_version)
        except KraftformError as exc:
            raise NotYet(str(exc)) from None

    poll(f"broker {broker} to be unregistered", 60, attempt, interval=2.0)
