"""A connector's offsets moved as a reviewed change: a reset destructive, forward destructive, back disruptive, an
offset kraftform cannot order destructive; refused unless the connector is stopped; a `--set` file checked."""

from __future__ import annotations

import pytest

from kraftform.errors import UsageError
from kraftform.plan.changes import Action, ConnectorOffset, Safety
from kraftform.plan.connector_offsets import canonical, from_rest, offsets_plan, parse_offsets_file
from kraftform.specset.model import ConnectorSpec

SINK = ConnectorSpec("archive", "org.apache.kafka.connect.file.FileStreamSinkConnector", "sink", ("orders",))
SOURCE = ConnectorSpec("cdc", "io.debezium.connector.postgresql.PostgresConnector", "source", ("cdc.orders",))
P0 = canonical({"kafka_topic": "orders", "kafka_partition": 0})
P1 = canonical({"kafka_partition": 1, "kafka_topic": "orders"})


def at(offset: int) -> str:
    return canonical({"kafka_offset": offset})


def test_rest_answers_are_keyed_by_partition_whatever_the_key_order() -> None:
    answer = {"offsets": [{"partition": {"kafka_partition": 0, "kafka_topic": "orders"},
                           "offset": {"kafka_offset": 5}}]}
    assert from_rest(answer) == {P0: at(5)}
    assert from_rest(None) == {}


def test_back_replays_forward_skips_a_reset_starts_over_and_the_same_offset_is_no_change() -> None:
    plan = offsets_plan("c", SINK, "stopped", {P0: at(10), P1: at(10)}, {P0: at(4), P1: at(15)})
    moves = {c.payload.partition: c for c in plan.changes if isinstance(c.payload, ConnectorOffset)}
    assert (moves[P0].safety, moves[P0].reason) == (Safety.DISRUPTIVE, "moves 6 back: replays what lies between")
    assert (moves[P1].safety, moves[P1].reason) == (Safety.DESTRUCTIVE, "moves 5 forward: skips what lies between")
    assert moves[P0].payload == ConnectorOffset(P0, at(4))
    assert not plan.problems
    reset = offsets_plan("c", SINK, "stopped", {P0: at(10)}, {P0: None})
    [change] = reset.changes
    assert (change.action, change.safety, change.desired) == (Action.DELETE, Safety.DESTRUCTIVE, "(reset)")
    assert "auto.offset.reset" in change.reason
    assert offsets_plan("c", SINK, "running", {P0: at(10)}, {P0: at(10)}).empty


def test_a_source_offset_kraftform_cannot_order_is_destructive_and_a_new_partition_disruptive() -> None:
    lsn = {canonical({"server": "cdc"}): canonical({"lsn": 100, "txId": 7})}
    [change] = offsets_plan("c", SOURCE, "stopped", lsn, {canonical({"server": "cdc"}): canonical({"lsn": 90})}).changes
    assert change.safety == Safety.DESTRUCTIVE and "cannot order" in change.reason
    [new] = offsets_plan("c", SOURCE, "stopped", {}, {canonical({"server": "cdc"}): canonical({"lsn": 90})}).changes
    assert new.safety == Safety.DISRUPTIVE and new.current is None


def test_a_connector_that_is_not_stopped_is_a_problem_naming_its_spec_line() -> None:
    plan = offsets_plan("c", SINK, "running", {P0: at(10)}, {P0: None})
    [problem] = plan.problems
    assert "connector 'archive' is running" in problem and "state: stopped" in problem


def test_a_set_file_is_checked_entry_by_entry() -> None:
    parsed = parse_offsets_file("f.json", {"offsets": [
        {"partition": {"kafka_topic": "orders", "kafka_partition": 0}, "offset": {"kafka_offset": 3}},
        {"partition": {"kafka_topic": "orders", "kafka_partition": 1}, "offset": None}]})
    assert parsed == {P0: at(3), P1: None}
    with pytest.raises(UsageError, match=r"f.json: expected"):
        parse_offsets_file("f.json", [1, 2])
    with pytest.raises(UsageError, match=r"f.json: offsets\[1\]: expected a `partition` object"):
        parse_offsets_file("f.json", {"offsets": [{"partition": {"a": 1}, "offset": None}, {"partition": 3}]})
    with pytest.raises(UsageError, match=r"offsets\[1\]: partition .* is given twice"):
        parse_offsets_file("f.json", {"offsets": [{"partition": {"a": 1}, "offset": None},
                                                   {"partition": {"a": 1}, "offset": None}]})


@pytest.mark.parametrize(("partition", "offset", "why"), [
    (canonical({"kafka_topic": "orders", "kafka_partition": 0}), canonical({"kafka_offset": -1}), "at least 0"),
    (canonical({"kafka_topic": "other", "kafka_partition": 0}), None, "'other' is not one the connector reads"),
    (canonical({"topic": "orders"}), None, "a sink's partition is"),
])
def test_a_sink_offset_connect_would_refuse_is_a_problem_before_it_is_sent(partition: str, offset: str | None,
                                                                           why: str) -> None:
    [problem] = offsets_plan("c", SINK, "stopped", {}, {partition: offset}).problems
    assert why in problem and "connector 'archive'" in problem
