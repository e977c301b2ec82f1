"""`kraftform status`'s verdict from observations, pure: each problem one sentence naming what it is about."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from kraftform.cluster.topology import topology
from kraftform.declared import load_specs
from kraftform.monitoring.status import ConsumerPosition, Observed, Partition, assess, render_text

TOPO = topology(load_specs(Path(__file__).resolve().parents[2] / "fixtures" / "cluster").cluster)
DECLARED = {"orders": 2}


def _healthy() -> Observed:
    return Observed(brokers=(1, 2, 3), quorum_leader=1001, voters_behind_ms={1001: 0, 1002: 10, 1003: 5},
                    partitions=tuple(Partition("orders", p, (1, 2, 3), (1, 2, 3), 1) for p in range(3)),
                    min_isr={"orders": 2},
                    consumers=(ConsumerPosition("scorer", "spark", ("orders",), {("orders", p): 10 for p in range(3)},
                                                1000),),
                    end_offsets={("orders", p): 10 for p in range(3)})


def test_a_healthy_cluster_has_no_problems_and_says_so() -> None:
    status = assess(TOPO, DECLARED, _healthy())
    assert status.healthy and status.problems == ()
    assert render_text(status).splitlines()[0] == "cluster kftest: healthy"
    assert status.consumers[0].lag == 0


def test_a_missing_broker_and_its_partitions_are_named() -> None:
    seen = dataclasses.replace(_healthy(), brokers=(1, 3), partitions=(
        Partition("orders", 0, (1, 2, 3), (1, 3), 1), Partition("orders", 1, (1, 2, 3), (1,), 1),
        Partition("orders", 2, (2, 3, 1), (), -1)))
    problems = assess(TOPO, DECLARED, seen).problems
    assert problems == (
        "broker kftest-broker-1 (node 2) not registered: 2 of 3 declared brokers up",
        "topic orders: 1 partition(s) offline, no leader (2): nobody can read or write them",
        "topic orders: 1 partition(s) below min.insync.replicas=2 (1): acks=all producers are refused",
        "topic orders: 2 partition(s) under-replicated (0, 1)")


def test_a_voter_behind_and_a_lost_majority_are_named() -> None:
    one_behind = dataclasses.replace(_healthy(), voters_behind_ms={1001: 0, 1002: 9000, 1003: 0})
    assert assess(TOPO, DECLARED, one_behind).problems == (
        "controller kftest-controller-1 (voter 1002) is not caught up with the quorum leader 1001: last caught up "
        "9 s ago (down or behind)",)
    two_behind = dataclasses.replace(_healthy(), voters_behind_ms={1001: 0, 1002: 9000, 1003: 2**31})
    problems = assess(TOPO, DECLARED, two_behind).problems
    assert "last caught up never" in problems[1]
    assert problems[-1] == "only 1 of 3 voters are caught up: the quorum has lost its majority and metadata " \
                           "cannot change"


def test_lag_above_the_profile_limit_is_a_problem_and_below_it_is_not() -> None:
    ends = {("orders", p): 10 + 400 * p for p in range(3)}  # 0 + 400 + 800 behind
    status = assess(TOPO, DECLARED, dataclasses.replace(_healthy(), end_offsets=ends))
    assert status.consumers[0].lag == 1200
    assert status.problems == ("Spark consumer scorer is 1,200 records behind on orders (its limit: 1,000)",)
    limit_higher = dataclasses.replace(_healthy(), end_offsets=ends, consumers=(
        dataclasses.replace(_healthy().consumers[0], limit=10_000),))
    assert assess(TOPO, DECLARED, limit_higher).healthy


def test_what_could_not_be_read_is_a_problem_and_lag_is_unknown_not_zero() -> None:
    seen = dataclasses.replace(_healthy(), end_offsets={}, unread=("the end offsets: timed out",))
    status = assess(TOPO, DECLARED, seen)
    assert status.problems == ("could not read the end offsets: timed out",)
    assert status.consumers[0].lag is None


def test_a_declared_topic_that_does_not_exist_is_named() -> None:
    status = assess(TOPO, {**DECLARED, "payments": 2}, _healthy())
    assert status.problems == ("topic payments is declared but does not exist (kraftform apply creates it)",)


def test_a_registered_broker_that_does_not_answer_is_down_and_its_partitions_under_replicated() -> None:
    seen = dataclasses.replace(_healthy(), unreachable={2: "127.30.0.2:9092"})
    assert assess(TOPO, DECLARED, seen).problems == (
        "broker kftest-broker-1 (node 2) is registered but does not answer at 127.30.0.2:9092",
        "topic orders: 3 partition(s) under-replicated (0, 1, 2)")


def test_a_share_groups_lag_is_kafkas_own_count_and_without_it_measured_from_its_start_offsets() -> None:
    counted = ConsumerPosition("workers", "share", ("orders",), {("orders", 0): 4, ("orders", 1): 0}, 5,
                               lags={("orders", 0): 2, ("orders", 1): 7})  # in-flight records: not past the start
    status = assess(TOPO, DECLARED, dataclasses.replace(_healthy(), consumers=(counted,)))
    assert (status.consumers[0].lag, dict(status.consumers[0].partitions)) == (9, {"orders[0]": 2, "orders[1]": 7})
    assert status.problems == ("share group workers is 9 records behind on orders (its limit: 5)",)
    assert "share group workers: lag 9 records not acknowledged (limit 5)" in render_text(status)
    measured = dataclasses.replace(counted, lags=None)
    assert assess(TOPO, DECLARED, dataclasses.replace(_healthy(), consumers=(measured,))).consumers[0].lag == 26
    never = dataclasses.replace(counted, positions=None, lags=None, topics=())
    assert "share group workers: not started" in render_text(
        assess(TOPO, DECLARED, dataclasses.replace(_healthy(), consumers=(never,))))


def test_connectors_are_judged_against_their_declared_state_and_failed_tasks_named() -> None:
    from kraftform.monitoring.status import ConnectSeen
    from kraftform.plan.connectors import LiveConnector
    from kraftform.specset.model import ConnectorSpec, ConnectSpec

    sink = ConnectorSpec("archive", "FileStreamSinkConnector", "sink", ("orders",))
    paused = ConnectorSpec("lines", "FileStreamSourceConnector", "source", ("lines",), state="paused")
    gone = ConnectorSpec("gone", "FileStreamSinkConnector", "sink", ("orders",))
    spec = ConnectSpec("kc", "kc-user", workers=2, connectors=(sink, paused, gone))
    tasks = ((0, "running", ""), (1, "failed", "Boom (caused by X)"))
    live = {"archive": LiveConnector("archive", {}, "running", tasks),
            "lines": LiveConnector("lines", {}, "paused", ((0, "paused", ""),)),
            "stray": LiveConnector("stray", {}, "running", ())}
    status = assess(TOPO, DECLARED, _healthy(), (ConnectSeen(spec, 1, live),))
    assert status.problems == (
        "Connect cluster kc: 1 of 2 worker(s) running (`kraftform connect up` starts the others)",
        "connector kc/archive: task 1 failed: Boom (caused by X)",
        "connector kc/gone is declared running but absent (`kraftform connect apply` creates it)",
        "connector kc/stray is running but no spec declares it")
    by_name = {k.name: k for k in status.connectors}
    assert by_name["lines"].as_declared and not by_name["archive"].as_declared
    assert by_name["archive"].failed_tasks == 1 and by_name["stray"].declared is None
    assert "connector kc/archive: running (declared running); task 0 running, task 1 failed" in render_text(status)
    unread = assess(TOPO, DECLARED, _healthy(), (ConnectSeen(spec, 0, None, "refused"),))
    assert unread.problems[-1] == "Connect cluster kc: its connectors cannot be read: refused"
