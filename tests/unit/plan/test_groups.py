"""Groups' settings planned: live against what a declared group holds, and in review between revisions."""

from __future__ import annotations

from kraftform.declared import diff_specs, load_specs
from kraftform.plan.changes import Action, ConfigValue, Kind, Safety
from kraftform.plan.groups import group_config_changes

from ...conftest import SpecsCopy


def test_each_declared_setting_is_set_an_undeclared_one_removed_and_equal_ones_left() -> None:
    changes = group_config_changes(
        {"billing": {"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "6000"},
         "fresh": {"share.auto.offset.reset": "earliest"}},
        {"billing": {"consumer.session.timeout.ms": "55000", "consumer.heartbeat.interval.ms": "6000",
                     "consumer.assignment.interval.ms": "2000"},
         "elsewhere": {"consumer.session.timeout.ms": "60000"}})
    seen = [(c.action, c.resource, c.key, c.current, c.desired, c.payload) for c in changes]
    assert seen == [
        (Action.DELETE, "billing", "consumer.assignment.interval.ms", "2000", None, ConfigValue(None)),
        (Action.UPDATE, "billing", "consumer.session.timeout.ms", "55000", "50000", ConfigValue("50000")),
        (Action.UPDATE, "fresh", "share.auto.offset.reset", None, "earliest", ConfigValue("earliest")),
    ]
    assert all(c.kind is Kind.GROUP_CONFIG and c.safety is Safety.SAFE for c in changes)


def test_in_review_a_changed_setting_shows_and_an_undeclared_group_is_no_longer_managed(
        specs_copy: SpecsCopy) -> None:
    base, head = specs_copy("base"), specs_copy("head")
    (base / "groups.yaml").write_text("groups:\n  - name: billing\n    config: {consumer.session.timeout.ms: 50000}\n"
                                      "  - name: old\n    config: {share.isolation.level: read_committed}\n")
    (head / "groups.yaml").write_text("groups:\n  - name: billing\n    config: {consumer.session.timeout.ms: 55000}\n")
    plan = diff_specs(load_specs(base), load_specs(head))
    groups = [(c.resource, c.key, c.current, c.desired) for c in plan.changes if c.kind is Kind.GROUP_CONFIG]
    assert groups == [("billing", "consumer.session.timeout.ms", "50000", "55000"),
                      ("old", None, "managed", "unmanaged")]
