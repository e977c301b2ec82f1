"""The offline diff knows consumers: a change that makes the checkpoint unusable is destructive."""

from __future__ import annotations

from kraftform.declared import diff_specs, load_specs
from kraftform.plan.changes import Safety

from ...conftest import SpecsCopy, edit


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
