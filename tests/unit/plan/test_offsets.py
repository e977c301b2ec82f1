"""A consumer group's offsets reset, planned: pure."""

from __future__ import annotations

import pytest

from kraftform.declared import load_specs
from kraftform.errors import UsageError
from kraftform.plan.changes import Action, GroupOffset, Kind, Safety
from kraftform.plan.offsets import group_is_declared, parse_reset_to, reset_plan
from kraftform.plan.render import render_text

from ...conftest import EXAMPLE_SPECS


def test_where_to_is_the_ends_a_zoned_time_or_offsets_and_anything_else_is_said() -> None:
    assert parse_reset_to("earliest").kind == "earliest" and parse_reset_to("latest").kind == "latest"
    assert parse_reset_to("2026-11-24T09:30:00Z").at_ms == 1_795_512_600_000
    assert parse_reset_to("2026-11-24T10:30:00+01:00").at_ms == 1_795_512_600_000
    assert parse_reset_to("orders:0=12, orders:3=0").offsets == {("orders", 0): 12, ("orders", 3): 0}
    with pytest.raises(UsageError, match="give the time's zone"):
        parse_reset_to("2026-11-24T09:30:00")
    with pytest.raises(UsageError, match="'orders:x=1' is not topic:partition=offset"):
        parse_reset_to("orders:0=1,orders:x=1")
    with pytest.raises(UsageError, match="not earliest, latest, an ISO 8601 time"):
        parse_reset_to("yesterday")


def test_forward_skips_destructively_back_replays_and_a_first_offset_is_disruptive() -> None:
    plan = reset_plan("billing", {("orders", 0): 10, ("orders", 1): 50, ("orders", 2): None, ("orders", 3): 7},
                      {("orders", 0): 40, ("orders", 1): 20, ("orders", 2): 5, ("orders", 3): 7},
                      {("orders", p): (0, 60) for p in range(4)}, members=0)
    seen = [(c.resource, c.action, c.safety, c.current, c.desired, c.reason) for c in plan.changes]
    assert seen == [
        ("billing orders-0", Action.UPDATE, Safety.DESTRUCTIVE, "10", "40",
         "skips 30 record(s) the group has not read"),
        ("billing orders-1", Action.UPDATE, Safety.DISRUPTIVE, "50", "20", "replays 30 record(s) the group has read"),
        ("billing orders-2", Action.UPDATE, Safety.DISRUPTIVE, None, "5",
         "no committed offset yet: the group starts here, not at its auto.offset.reset position"),
    ]
    assert all(c.kind is Kind.OFFSETS for c in plan.changes) and plan.problems == ()
    assert plan.changes[0].payload == GroupOffset("orders", 0, 40)
    assert render_text(plan).startswith("Offsets reset: 3 changes (1 destructive, 2 disruptive)\n")


def test_a_group_with_members_is_a_problem_and_an_offset_outside_the_records_is_refused() -> None:
    plan = reset_plan("billing", {("orders", 0): 10}, {("orders", 0): 99}, {("orders", 0): (5, 60)}, members=2)
    assert [(c.action, c.reason) for c in plan.changes] == [
        (Action.REFUSE, "offset 99 is outside the partition's records (5 to 60)")]
    assert plan.problems == ("group 'billing' has 2 active member(s): Kafka moves the offsets of a group only when "
                             "it has none; stop its consumers first",)


def test_a_group_is_declared_by_a_literal_or_prefixed_grant() -> None:
    specs = load_specs(EXAMPLE_SPECS)
    assert group_is_declared(specs, "legacy-billing")  # literal
    assert group_is_declared(specs, "payments-service-ledger")  # under the prefix payments-service
    assert not group_is_declared(specs, "legacy-billing-2") and not group_is_declared(specs, "nobody")
