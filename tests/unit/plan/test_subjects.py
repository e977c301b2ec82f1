"""The subjects' plan against a registry's state and its own compatibility answers; the offline diff of two spec
revisions, classed by Avro's resolution rules."""

from __future__ import annotations

import dataclasses
import json

from kraftform.plan.avro_compat import incompatibilities, unreadable
from kraftform.plan.changes import Action, Kind, Safety, SubjectWork
from kraftform.plan.specdiff import subject_diff
from kraftform.plan.subjects import CheckAnswer, SubjectState, level_change_safety, subject_changes
from kraftform.specset.model import ClusterSpec, SpecSet, SubjectSpec

V1 = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "int"}]}


def schema(*extra: dict[str, object], base: dict[str, object] | None = None) -> str:
    doc = json.loads(json.dumps(base or V1))
    doc["fields"] += list(extra)
    return json.dumps(doc)


def spec(text: str = json.dumps(V1), level: str = "BACKWARD") -> SubjectSpec:
    return SubjectSpec("orders-value", "orders", "value", text, "AVRO", level, "order.avsc")


def state(*versions: int, latest: str = json.dumps(V1), level: str = "BACKWARD",
          declared: int | None = None) -> SubjectState:
    return SubjectState("orders-value", versions, latest, "AVRO", level, declared)


def owns_all(_topic: str) -> bool:
    return True


def test_a_new_subject_is_registered_with_its_level_and_an_unchanged_one_is_left_alone() -> None:
    [change] = subject_changes((spec(),), {}, {}, owns_all)
    assert (change.action, change.kind, change.safety) == (Action.CREATE, Kind.SUBJECT, Safety.SAFE)
    assert change.payload == SubjectWork("BACKWARD", spec().schema, "AVRO")
    # The registry keeps the text it was given: another layout of the same schema is no change.
    assert subject_changes((spec(),), {"orders-value": state(1, latest=json.dumps(V1, indent=2))}, {},
                           owns_all) == []


def test_a_new_version_goes_in_when_the_registry_finds_it_compatible_and_is_refused_in_its_words_otherwise() -> None:
    new = schema({"name": "note", "type": "string", "default": ""})
    [change] = subject_changes((spec(new),), {"orders-value": state(1, 2)}, {"orders-value": CheckAnswer(True)},
                               owns_all)
    assert (change.action, change.safety, change.current) == (Action.UPDATE, Safety.SAFE, "version 2")
    assert change.desired == 'version 3: + note (string, default "")'  # the fields, not the whole schema
    assert "version 3, checked compatible by the registry under BACKWARD" in change.reason
    assert change.payload == SubjectWork(None, new, "AVRO")
    refused = CheckAnswer(False, ("reader field 'note' has no default",))
    [change] = subject_changes((spec(new),), {"orders-value": state(1)}, {"orders-value": refused}, owns_all)
    assert change.action is Action.REFUSE and change.payload is None
    assert change.reason.endswith("refused by the registry under BACKWARD against version 1: reader field 'note' "
                                  "has no default")
    # With the check turned off (NONE) the registry takes anything: nothing to refuse.
    [change] = subject_changes((spec(new, "NONE"),), {"orders-value": state(1, level="NONE")},
                               {"orders-value": CheckAnswer(False)}, owns_all)
    assert change.action is Action.UPDATE


def test_a_version_registered_by_hand_after_the_declared_one_is_drift_the_plan_refuses_to_undo() -> None:
    later = schema({"name": "x", "type": "int", "default": 0})
    [change] = subject_changes((spec(),), {"orders-value": state(1, 2, 3, latest=later, declared=1)}, {}, owns_all)
    assert change.action is Action.REFUSE and change.safety is Safety.DESTRUCTIVE
    assert change.reason.startswith("drift: version(s) 2, 3 registered outside the specs after the declared version 1")


def test_level_changes_are_classed_by_what_they_let_in() -> None:
    assert level_change_safety("BACKWARD", "FULL") is Safety.SAFE
    assert level_change_safety("FULL", "BACKWARD") is Safety.DISRUPTIVE
    assert level_change_safety("BACKWARD", "NONE") is Safety.DESTRUCTIVE
    [change] = subject_changes((spec(level="FORWARD"),), {"orders-value": state(1)}, {}, owns_all)
    assert (change.key, change.current, change.desired, change.safety) == (
        "compatibility", "BACKWARD", "FORWARD", Safety.DISRUPTIVE)
    assert change.payload == SubjectWork(compatibility="FORWARD")


def test_an_undeclared_subject_is_deleted_only_for_a_topic_kraftform_owns() -> None:
    observed = {"orders-key": dataclasses.replace(state(1, 2), name="orders-key"),
                "billing-value": dataclasses.replace(state(1), name="billing-value"),
                "shop.Order": dataclasses.replace(state(1), name="shop.Order")}
    [change] = subject_changes((), observed, {}, lambda topic: topic == "orders")
    assert (change.action, change.resource, change.safety) == (Action.DELETE, "orders-key", Safety.DESTRUCTIVE)
    assert change.payload == SubjectWork(delete=True)


def test_avro_resolution_follows_the_specification() -> None:
    with_default = json.loads(schema({"name": "note", "type": "string", "default": ""}))
    without = json.loads(schema({"name": "note", "type": "string"}))
    assert unreadable(with_default, V1) == [] and unreadable(V1, with_default) == []
    assert unreadable(without, V1) == ["field 'note': added without a default (data written before has none)"]
    wider = json.loads(json.dumps(V1).replace('"int"', '"long"'))
    assert unreadable(wider, V1) == []
    assert unreadable(V1, wider) == ["qty: long cannot be read as int (only widening promotions are)"]
    optional = json.loads(json.dumps(V1).replace('"int"', '["null", "int"]'))
    assert unreadable(optional, V1) == [] and unreadable(V1, optional) != []
    red = {"type": "enum", "name": "Colour", "symbols": ["RED"]}
    both = {"type": "enum", "name": "Colour", "symbols": ["RED", "BLUE"]}
    assert unreadable(both, red) == [] and unreadable(red, both) == [
        "the top level: enum symbol(s) BLUE unknown to the reader"]
    assert incompatibilities("BACKWARD", V1, without) != [] and incompatibilities("FORWARD", V1, without) == []
    assert incompatibilities("NONE", V1, without) == []


def test_the_offline_diff_classes_schema_changes_without_a_registry() -> None:
    cluster = ClusterSpec(name="c", brokers=3, kafka_version="4.4.0")
    base = SpecSet(cluster, subjects=(spec(),))

    def diff(*subjects: SubjectSpec) -> list[tuple[str, Safety]]:
        return [(c.key or "", c.safety) for c in subject_diff(base, SpecSet(cluster, subjects=subjects))]

    assert diff(spec(schema({"name": "note", "type": ["null", "string"], "default": None}))) == [
        ("schema", Safety.SAFE)]
    assert diff(spec(schema({"name": "note", "type": "string"}))) == [("schema", Safety.DESTRUCTIVE)]
    removed = json.dumps({"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]})
    assert diff(spec(removed)) == [("schema", Safety.DISRUPTIVE)]  # BACKWARD allows it; old readers need qty
    assert diff(spec(level="FORWARD")) == [("compatibility", Safety.DISRUPTIVE)]
    assert diff(spec(removed, "NONE")) == [("compatibility", Safety.DESTRUCTIVE), ("schema", Safety.DESTRUCTIVE)]
    assert diff() == [("schema", Safety.DESTRUCTIVE)]
    assert [(c.action, c.safety) for c in subject_diff(SpecSet(cluster), base)] == [(Action.CREATE, Safety.SAFE)]
