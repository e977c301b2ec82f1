"""What the plan says of node work it finds half done or undone: a roll interrupted at a node, a reassignment in
flight, a declared node that is not running."""

from __future__ import annotations

import pytest

from kraftform.declared import load_specs
from kraftform.errors import ClusterUnhealthy
from kraftform.plan.changes import Action, Safety
from kraftform.runtime.nodes.deployment import Deployment, NodeRecord
from kraftform.runtime.nodes.rolling import (
    ROLLING,
    ClusterWork,
    LostHost,
    RollOptions,
    carry_out,
    interrupted,
    waiting_text,
)

from ....conftest import EXAMPLE_SPECS


def deployment(**extra: str) -> Deployment:
    nodes = [NodeRecord(f"p-broker-{i}", i + 1, ["broker"]) for i in range(3)]
    return Deployment("local", "p", "localhost:1", 3, "4.3.1", nodes, dict(extra))


def test_the_node_a_roll_was_restarting_is_found_by_its_mark_or_its_kept_previous_record() -> None:
    assert interrupted(deployment()) == ()
    assert interrupted(deployment(**{ROLLING: "p-broker-1"})) == ("p-broker-1",)
    replaced = deployment()
    replaced.previous["p-broker-2"] = replaced.nodes[2]
    assert interrupted(replaced) == ("p-broker-2",)
    # A mark naming a node no longer in the cluster (removed since) is not a node to check.
    assert interrupted(deployment(**{ROLLING: "p-broker-9"})) == ()


def test_the_plan_shows_an_interrupted_node_first_and_a_reassignment_in_flight() -> None:
    cluster = load_specs(EXAMPLE_SPECS).cluster
    work = ClusterWork(in_progress=("p-broker-1",))
    assert work.to_do
    [change] = work.changes(cluster)
    assert (change.action, change.resource, change.safety) == (Action.UPDATE, "p-broker-1", Safety.DISRUPTIVE)
    assert "interrupted" in change.reason and "checked first" in change.reason
    moving = tuple(f"t-{p}" for p in range(7))
    [moves] = ClusterWork(rebalance_pending=True, reassigning=moving).changes(cluster)
    assert "7 partition(s) are being reassigned now (t-0, t-1, t-2, t-3, t-4 and 2 more)" in moves.reason
    assert "apply waits until that ends" in moves.reason


def test_a_declared_node_that_is_not_running_is_work_to_do_a_safe_start_shown_before_the_rest() -> None:
    cluster = load_specs(EXAMPLE_SPECS).cluster
    assert not ClusterWork().to_do
    work = ClusterWork(stopped=("p-broker-2",), in_progress=("p-broker-1",))
    assert work.to_do
    started, checked = work.changes(cluster)
    assert (started.resource, started.key, started.current, started.desired, started.safety) == (
        "p-broker-2", "running", "stopped", "running", Safety.SAFE)
    assert "started again with its data and configuration as they are" in started.reason
    assert checked.resource == "p-broker-1"


def test_a_host_that_does_not_answer_is_shown_first_and_node_work_waits_for_it() -> None:
    """The plan names the lost host, its nodes and that node work waits; `carry_out` does none of it."""
    cluster = load_specs(EXAMPLE_SPECS).cluster
    why = "host 'b': no Docker engine answers at tcp://10.0.0.2:2376 within 5 s (refused)"
    work = ClusterWork(stopped=("p-broker-0",), lost_hosts=(LostHost("b", why, ("p-broker-1", "p-controller-1")),))
    lost, started = work.changes(cluster)
    assert (lost.resource, lost.key, lost.current, lost.desired, lost.safety) == (
        "host b", "engine", "not answering", "answering", Safety.SAFE)
    assert lost.reason.startswith(why) and "(p-broker-1, p-controller-1)" in lost.reason
    assert "node work below waits until it answers" in lost.reason and started.resource == "p-broker-0"
    assert waiting_text(work) == f"node work waits for {why}"
    with pytest.raises(ClusterUnhealthy, match="node work waits for host 'b'"):
        carry_out(None, cluster, work, None, RollOptions(), print)  # type: ignore[arg-type]
