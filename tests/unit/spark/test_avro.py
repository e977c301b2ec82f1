"""Avro consumers offline: the columns a record schema gives the `input` view (spark-avro's mapping), the reader
schema cut to what the SQL reads, and `validate` on an Avro consumer's SQL and its topics' schemas."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import fastavro
import pytest

from kraftform.declared import load_specs
from kraftform.errors import SpecError
from kraftform.spark.avro import AvroShapeError, columns, encoder, framed, reader_schema
from kraftform.spark.settings import job_settings

from ...conftest import SpecsCopy

PAYMENT: dict[str, Any] = {
    "type": "record", "name": "Payment", "namespace": "shop",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "day", "type": {"type": "int", "logicalType": "date"}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "either", "type": ["int", "string"]},
        {"name": "card", "type": {"type": "record", "name": "Card", "fields": [
            {"name": "brand", "type": {"type": "enum", "name": "Brand", "symbols": ["VISA", "MC"]}},
            {"name": "digest", "type": {"type": "fixed", "name": "Digest", "size": 4}}]}},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "attributes", "type": {"type": "map", "values": "long"}},
        {"name": "previous", "type": ["null", "Card"], "default": None},
    ]}


def test_a_record_schema_gives_the_columns_spark_avro_decodes_it_into() -> None:
    assert columns(json.dumps(PAYMENT)) == {
        "id": "STRING", "amount": "DECIMAL(12,2)", "at": "TIMESTAMP", "day": "DATE", "note": "STRING",
        "either": "STRUCT<member0: INT, member1: STRING>",
        "card": "STRUCT<`brand`: STRING, `digest`: BINARY>",
        "tags": "ARRAY<STRING>", "attributes": "MAP<STRING, BIGINT>",
        "previous": "STRUCT<`brand`: STRING, `digest`: BINARY>",  # a named type used again, by its name
    }
    with pytest.raises(AvroShapeError, match="not an Avro record"):
        columns('"string"')


def test_the_reader_schema_keeps_the_fields_read_and_the_types_they_name() -> None:
    read = json.loads(reader_schema(json.dumps(PAYMENT), ("ID", "previous")))
    assert [f["name"] for f in read["fields"]] == ["id", "previous"]
    # `Card` was defined by the dropped field `card`: its definition moves to where `previous` names it.
    assert read["fields"][1]["type"][1]["name"] == "Card"
    assert columns(json.dumps(read))["previous"] == "STRUCT<`brand`: STRING, `digest`: BINARY>"
    assert [f["name"] for f in json.loads(reader_schema(json.dumps(PAYMENT), ()))["fields"]] == ["id"]
    assert json.loads(reader_schema(json.dumps(PAYMENT), None)) == PAYMENT


def avro_consumer(specs: Path, query: str, schema: dict[str, Any] = PAYMENT, value: str = "{format: avro}",
                  topic_schemas: str = "{value: schemas/payment.avsc}") -> Path:
    (specs / "schemas").mkdir(exist_ok=True)
    (specs / "schemas" / "payment.avsc").write_text(json.dumps(schema, indent=1))
    sql = "".join(f"      {line}\n" for line in query.splitlines())
    (specs / "avro.yaml").write_text(f"""\
registry: {{}}
topics:
  - {{name: orders.payments, partitions: 3, schemas: {topic_schemas}}}
  - {{name: orders.refunds, partitions: 3}}
acls:
  - {{principal: "User:fraud-scoring", resource: {{type: topic, name: orders.payments}}, operations: [read]}}
  - {{principal: "User:fraud-scoring", resource: {{type: topic, name: orders.refunds}}, operations: [read]}}
consumers:
  - name: payment-notes
    topics: [orders.payments]
    user: fraud-scoring
    group_id_prefix: fraud-scoring-notes
    value: {value}
    sink: {{type: console}}
    query: |
{sql}""")
    return specs


def problems(specs: Path) -> list[str]:
    with pytest.raises(SpecError) as caught:
        load_specs(specs)
    return [str(p) for p in caught.value.problems]


def test_a_whole_wire_format_value_decodes_with_the_framed_writer_and_the_reader_skips_the_header() -> None:
    """What the job hands `from_avro`: the value as the producer wrote it (no body cut out of it)."""
    writer = json.dumps({"type": "record", "name": "Order", "namespace": "shop", "fields": [
        {"name": "id", "type": "string"}, {"name": "qty", "type": "int"}, {"name": "note", "type": "string"}]})
    value = encoder(writer, 258)({"id": "o-1", "qty": 3, "note": "x" * 300})
    assert value[:5] == b"\0\0\0\x01\x02"
    framed_writer = fastavro.parse_schema(json.loads(framed(writer)))
    reader = fastavro.parse_schema(json.loads(reader_schema(writer, ["qty", "id"])))
    assert fastavro.schemaless_reader(io.BytesIO(value), framed_writer, reader) == {"id": "o-1", "qty": 3}
    # The header is a field of the writer's record alone, first, and keeps the record's name.
    schema = json.loads(framed(writer))
    assert (schema["name"], schema["fields"][0]["type"]["size"]) == ("Order", 5)
    assert [f["name"] for f in schema["fields"][1:]] == ["id", "qty", "note"]


def test_an_avro_consumers_sql_is_checked_against_its_topics_schema(specs_copy: SpecsCopy) -> None:
    specs = avro_consumer(specs_copy(), "SELECT id, note, card.brand\nFROM input WHERE amount > 10")
    loaded = load_specs(specs)
    consumer = next(c for c in loaded.consumers if c.name == "payment-notes")
    assert consumer.value.format == "avro" and consumer.value.schema == json.dumps(PAYMENT, separators=(",", ":"))
    assert job_settings(consumer, loaded).facts.reads == ("id", "amount", "note", "card")
    avro_consumer(specs, "SELECT id,\n  refund_id FROM input")
    [problem] = problems(specs)
    assert problem.startswith(f"{specs / 'avro.yaml'}:15:") and "SQL line 2, column 3" in problem
    assert "not a field of the topics' declared Avro value schema" in problem
    assert "refund_id" in problem and "id, amount, at, day, note" in problem


@pytest.mark.parametrize(("value", "topic_schemas", "says"), [
    ("{format: avro, schema: 'id STRING'}", "{value: schemas/payment.avsc}", "remove value.schema"),
    ("{format: avro}", "{key: schemas/payment.avsc}", "topic 'orders.payments' declares no Avro value schema"),
    ("{format: avro}", "{value: {file: schemas/payment.avsc, type: json}}", "declares no Avro value schema"),
])
def test_an_avro_consumer_reads_with_its_topics_declared_avro_schema_and_no_other(
        specs_copy: SpecsCopy, value: str, topic_schemas: str, says: str) -> None:
    specs = avro_consumer(specs_copy(), "SELECT * FROM input", value=value, topic_schemas=topic_schemas,
                          schema=PAYMENT if "json" not in topic_schemas else {"type": "object"})
    found = problems(specs)
    assert any(says in p and "consumer 'payment-notes'" in p for p in found), found


def _changed(fields: list[dict[str, Any]]) -> dict[str, Any]:
    return {**PAYMENT, "fields": fields}


@pytest.mark.parametrize(("fields", "says"), [
    # amount's type changed: the consumer's SQL reads it
    ([*PAYMENT["fields"][:1], {"name": "amount", "type": "string"}, *PAYMENT["fields"][2:]],
     "reads field 'amount' (SQL line 2 of its query at {avro}:15: FROM input WHERE amount > 10); it is "
     "DECIMAL(12,2) in the base revision (schemas/payment.avsc), STRING as declared"),
    # a new field the SQL reads, without a default: records written before cannot give it
    ([*PAYMENT["fields"], {"name": "refund_id", "type": "string"}],
     "reads field 'refund_id' (SQL line 1 of its query at {avro}:15: SELECT id, note, card.brand, refund_id); the base "
     "revision (schemas/payment.avsc) has no field 'refund_id' and the declared schema gives it no default"),
])
def test_diff_and_plan_refuse_a_schema_change_a_declared_consumer_cannot_read(
        specs_copy: SpecsCopy, fields: list[dict[str, Any]], says: str) -> None:
    from kraftform.declared import diff_specs
    from kraftform.plan.changes import Action, Safety
    from kraftform.plan.subjects import CheckAnswer, SubjectState, subject_changes
    from kraftform.spark.schema_gate import readers_broken

    query = "SELECT id, note, card.brand{}\nFROM input WHERE amount > 10"
    base = load_specs(avro_consumer(specs_copy("base"), query.format("")))
    reads_new = ", refund_id" if any(f["name"] == "refund_id" for f in fields) else ""
    specs = avro_consumer(specs_copy("head"), query.format(reads_new), _changed(fields))
    head = load_specs(specs)
    expected = says.format(avro=specs / "avro.yaml")
    [refused] = [c for c in diff_specs(base, head).changes if c.action is Action.REFUSE]
    assert refused.resource == "orders.payments-value" and refused.safety is Safety.DESTRUCTIVE
    assert "consumer 'payment-notes' " + expected in refused.reason

    # plan: the same gate against the registry's latest version, even where the registry found it compatible
    [subject] = head.subjects
    state = SubjectState(subject.name, (1,), base.subjects[0].schema, "AVRO", subject.compatibility)
    [change] = subject_changes(head.subjects, {subject.name: state}, {subject.name: CheckAnswer(True)},
                               lambda _: True, lambda spec, old, label: readers_broken(spec, old, label,
                                                                                        head.consumers))
    assert change.action is Action.REFUSE
    assert expected.replace("the base revision (schemas/payment.avsc)", "version 1") in change.reason


def test_a_change_the_consumer_does_not_read_or_reads_with_a_default_passes_the_gate(specs_copy: SpecsCopy) -> None:
    from kraftform.declared import diff_specs
    from kraftform.plan.changes import Action

    query = "SELECT id, note, card.brand{}\nFROM input WHERE amount > 10"
    base = load_specs(avro_consumer(specs_copy("base"), query.format("")))
    fields = [*PAYMENT["fields"][:3], {"name": "day", "type": "string"}, *PAYMENT["fields"][4:],
              {"name": "refund_id", "type": "string", "default": ""}]
    head = load_specs(avro_consumer(specs_copy("head"), query.format(", refund_id"), _changed(fields)))
    changes = diff_specs(base, head).changes
    assert not [c for c in changes if c.action is Action.REFUSE], changes  # `day` changed, but nothing reads it
