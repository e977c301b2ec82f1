from __future__ import annotations

import json

from kraftform.plan import Action, Change, Kind, Plan, Safety
from kraftform.plan.render import render_json, render_markdown, render_text

PLAN = Plan.of([
    Change(Action.CREATE, Kind.TOPIC, "a.v1", Safety.SAFE, "new topic", None, None, "3 partitions, RF 3"),
    Change(Action.REFUSE, Kind.PARTITIONS, "b.v1", Safety.DESTRUCTIVE, "cannot decrease", "partitions", "6", "3"),
    Change(Action.UPDATE, Kind.PARTITIONS, "c.v1", Safety.DISRUPTIVE, "keys remap", "partitions", "3", "6"),
    Change(Action.UPDATE, Kind.TOPIC_CONFIG, "d|v1", Safety.SAFE, "config change", "segment.ms", "1", "2"),
])


def test_plan_orders_by_apply_order_and_counts() -> None:
    assert [c.resource for c in PLAN.changes] == ["a.v1", "d|v1", "b.v1", "c.v1"]
    assert PLAN.counts() == {Safety.DESTRUCTIVE: 1, Safety.DISRUPTIVE: 1, Safety.SAFE: 2}
    assert [c.resource for c in PLAN.refused] == ["b.v1"]


def test_text_puts_the_dangerous_first() -> None:
    lines = render_text(PLAN).splitlines()
    assert lines[0] == "Plan: 4 changes (1 destructive, 1 disruptive, 2 safe; 1 refused)"
    assert lines[1] == "  ! [destructive] refuse partitions b.v1 partitions: 6 -> 3"
    assert lines[3].startswith("  ~ [disruptive] update partitions c.v1")
    assert render_text(Plan()) == "Plan: No changes.\n"


def test_markdown_sections_and_escaping() -> None:
    md = render_markdown(PLAN)
    assert md.index("Destructive") < md.index("Disruptive") < md.index("### Safe")
    assert "`d\\|v1`" in md and "**Refused changes**" in md


def test_json_is_the_same_data() -> None:
    data = json.loads(render_json(PLAN))
    assert data["summary"] == {"changes": 4, "destructive": 1, "disruptive": 1, "safe": 2, "refused": 1}
    assert data["changes"][2] == {"action": "refuse", "kind": "partitions", "resource": "b.v1",
                                  "safety": "destructive", "reason": "cannot decrease", "key": "partitions",
                                  "current": "6", "desired": "3"}
