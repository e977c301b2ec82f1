"""A schema change as the fields that changed: what a reviewer reads instead of two whole schemas."""

from __future__ import annotations

import json
from typing import Any

from kraftform.plan.schema_fields import FieldChange, describe, field_changes, type_text

V1: dict[str, Any] = {
    "type": "record", "name": "Order", "namespace": "shop", "fields": [
        {"name": "id", "type": "string"},
        {"name": "qty", "type": "int"},
        {"name": "address", "type": {"type": "record", "name": "Address", "fields": [{"name": "city",
                                                                                        "type": "string"}]}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW"]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "note", "type": ["null", "string"], "default": None},
    ]}


def changed(edit: Any) -> str:
    after = json.loads(json.dumps(V1))
    edit(after["fields"])
    return describe(json.dumps(V1), json.dumps(after))


def test_each_kind_of_field_change_reads_as_one_short_item() -> None:
    def everything(fields: list[dict[str, Any]]) -> None:
        fields[0] = {"name": "order_id", "type": "string", "aliases": ["id"]}
        fields[1]["type"] = "long"
        fields[2]["type"]["fields"].append({"name": "zip", "type": ["null", "string"], "default": None})
        fields[3]["type"]["symbols"].append("PAID")
        del fields[4]
        fields[4]["default"] = "n/a"
        fields[4]["type"] = ["string", "null"]
        fields.append({"name": "channel", "type": "string"})

    assert changed(everything) == (
        "~ order_id renamed from id; ~ qty: int -> long; + address.zip (null | string, default null); "
        "~ status: enum Status {NEW} -> enum Status {NEW, PAID}; ~ note: null | string -> string | null; "
        '~ note: default null -> "n/a"; + channel (string, no default); - tags (array<string>)')


def test_a_record_named_by_reference_is_the_record_it_names() -> None:
    def by_name(fields: list[dict[str, Any]]) -> None:
        fields.append({"name": "billing", "type": "shop.Address", "default": {"city": ""}})

    assert changed(by_name) == '+ billing (record Address, default {"city": ""})'
    assert type_text({"type": "long", "logicalType": "timestamp-millis"}) == "long (timestamp-millis)"
    assert type_text({"type": "map", "values": {"type": "fixed", "name": "Md5", "size": 16}}) == "map<fixed Md5[16]>"


def test_what_is_not_a_field_change_says_so() -> None:
    same = json.dumps(V1)
    documented = json.loads(same)
    documented["doc"] = "an order"
    assert field_changes(same, json.dumps(documented)) == ()
    assert describe(same, json.dumps(documented)) == "no field changed (docs or other attributes)"
    reordered = json.loads(same)
    reordered["fields"].reverse()
    assert describe(same, json.dumps(reordered)) == "the same fields, in another order"
    assert describe("not json", same) == "another schema"


def test_a_recursive_record_is_followed_once() -> None:
    node = {"type": "record", "name": "Node", "fields": [{"name": "next", "type": ["null", "Node"], "default": None}]}
    grown = json.loads(json.dumps(node))
    grown["fields"].append({"name": "value", "type": "int", "default": 0})
    assert field_changes(json.dumps(node), json.dumps(grown)) == (
        FieldChange("value", "added", after="int, default 0"),)
