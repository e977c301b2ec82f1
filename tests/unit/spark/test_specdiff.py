"""The offline diff knows consumers: a change that makes the checkpoint unusable is destructive."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kraftform.declared import diff_specs, load_specs
from kraftform.plan.changes import Safety

from ...conftest import REPO, SpecsCopy, edit


def consumer_changes(specs_copy: SpecsCopy, old: str, new: str) -> list[tuple[str, str | None, Safety]]:
    base, head = specs_copy("base"), specs_copy("head")
    edit(head / "consumers.yaml", old, new)
    plan = diff_specs(load_specs(base), load_specs(head))
    return [(c.resource, c.key, c.safety) for c in plan.changes if c.kind.value == "consumer"]


def test_a_new_grouping_key_resets_the_state(specs_copy: SpecsCopy) -> None:
    changes = consumer_changes(specs_copy, "GROUP BY user_id, session_window",
                               "GROUP BY user_id, device, session_window")
    assert ("clickstream-sessionizer", "checkpoint", Safety.DESTRUCTIVE) in changes
    assert ("clickstream-sessionizer", "query", Safety.DISRUPTIVE) in changes


def test_a_changed_aggregate_resets_the_state(specs_copy: SpecsCopy) -> None:
    changes = consumer_changes(specs_copy, "min(event_time) AS first_view", "avg(1) AS first_view")
    assert ("clickstream-sessionizer", "checkpoint", Safety.DESTRUCTIVE) in changes


def test_a_new_projection_of_a_stateless_query_keeps_the_checkpoint(specs_copy: SpecsCopy) -> None:
    changes = consumer_changes(specs_copy, "'source', topic,", "'source', topic, 'merchant', merchant,")
    assert changes == [("fraud-scoring", "query", Safety.DISRUPTIVE)]


def test_another_source_topic_resets_the_state(specs_copy: SpecsCopy) -> None:
    changes = consumer_changes(specs_copy, "topics: [payments.transactions.v1, payments.authorizations.v1]",
                               "topics: [payments.transactions.v1]")
    assert ("fraud-scoring", "checkpoint", Safety.DESTRUCTIVE) in changes


def refund_schema_changes(tmp_path: Path, edit_fields: Callable[[list[dict[str, Any]]], None],
                          query: str | None = None) -> list[tuple[str, str | None, Safety, str | None, str]]:
    """The example project's refunds (an Avro consumer reading order_id, cents and reason) with its schema edited."""
    base, head = tmp_path / "base", tmp_path / "head"
    for target in (base, head):
        shutil.copytree(REPO / "tests" / "example_project" / "specs", target)
    schema = json.loads((head / "schemas" / "refund.avsc").read_text())
    edit_fields(schema["fields"])
    (head / "schemas" / "refund.avsc").write_text(json.dumps(schema))
    if query is not None:
        edit(head / "consumers.yaml", "SELECT order_id, cents, coalesce(reason, 'unknown') AS reason", query)
    plan = diff_specs(load_specs(base), load_specs(head))
    return [(c.kind.value, c.key, c.safety, c.desired, c.reason) for c in plan.changes
            if c.kind.value in ("consumer", "subject")]


def test_a_field_added_to_an_avro_consumers_schema_shows_as_that_field_and_keeps_its_query(tmp_path: Path) -> None:
    changes = refund_schema_changes(
        tmp_path, lambda fields: fields.append({"name": "channel", "type": ["null", "string"], "default": None}))
    added = "+ channel (null | string, default null)"
    assert [(kind, key, safety, desired) for kind, key, safety, desired, _ in changes] == [
        ("subject", "schema", Safety.SAFE, added), ("consumer", "value schema", Safety.SAFE, added)]
    assert "the fields it reads (order_id, cents, reason) keep their types" in changes[1][4]


def test_a_consumer_reading_every_field_follows_the_schema_and_one_reading_a_retyped_field_is_refused(
        tmp_path: Path) -> None:
    changes = refund_schema_changes(
        tmp_path, lambda fields: fields.append({"name": "channel", "type": ["null", "string"], "default": None}),
        "SELECT *")
    assert ("consumer", "value schema", Safety.DISRUPTIVE) in [c[:3] for c in changes]

    def retyped(fields: list[dict[str, Any]]) -> None:
        fields[1]["type"] = "double"  # cents: long -> double, which the query reads

    changes = refund_schema_changes(tmp_path / "retyped", retyped)
    assert ("consumer", "value schema", Safety.DISRUPTIVE, "~ cents: long -> double") in [c[:4] for c in changes]
    assert [c[2] for c in changes if c[0] == "subject" and c[1] == "schema"] == [Safety.DESTRUCTIVE, Safety.DESTRUCTIVE]
