"""Topics' schemas in the specs: read from the files beside them, checked offline, each error at its line in the
schema file; a schema changed is a spec changed (the cache keys on schema files too)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftform.declared import load_specs
from kraftform.errors import SpecError

from ...conftest import SpecsCopy

ORDER = """\
{"type": "record", "name": "Order", "namespace": "shop",
 "fields": [{"name": "id", "type": "string"},
            {"name": "qty", "type": "int"}]}
"""


def with_schemas(specs: Path, schemas: str, avsc: str = ORDER, registry: str = "registry: {}\n") -> Path:
    (specs / "schemas").mkdir(exist_ok=True)
    (specs / "schemas" / "order.avsc").write_text(avsc)
    (specs / "registry.yaml").write_text(registry + "topics:\n  - name: orders.shop\n    partitions: 3\n"
                                         "    schemas:\n" + "".join(f"      {line}\n" for line in schemas.splitlines()))
    return specs


def problems(specs: Path) -> list[str]:
    with pytest.raises(SpecError) as caught:
        load_specs(specs)
    return [str(p) for p in caught.value.problems]


def test_a_topics_schema_is_a_subject_named_by_the_topic_with_the_registrys_default_level(
        specs_copy: SpecsCopy) -> None:
    loaded = load_specs(with_schemas(specs_copy(), "value: schemas/order.avsc",
                                     registry="registry: {compatibility: FULL}\n"))
    [subject] = loaded.subjects
    assert (subject.name, subject.topic, subject.part, subject.compatibility, subject.schema_type) == (
        "orders.shop-value", "orders.shop", "value", "FULL", "AVRO")
    assert subject.schema == ('{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id",'
                              '"type":"string"},{"name":"qty","type":"int"}]}')
    assert loaded.registry is not None and not loaded.registry.external and loaded.registry.port == 18081


def test_the_record_strategies_name_the_subject_after_the_record(specs_copy: SpecsCopy) -> None:
    specs = with_schemas(specs_copy(), "key: {file: schemas/order.avsc, compatibility: NONE}\nnaming: record")
    [subject] = load_specs(specs).subjects
    assert (subject.name, subject.part, subject.compatibility) == ("shop.Order", "key", "NONE")
    specs = with_schemas(specs, "value: schemas/order.avsc\nnaming: topic_record")
    assert [s.name for s in load_specs(specs).subjects] == ["orders.shop-shop.Order"]
    (specs / "schemas" / "order.avsc").write_text('"string"')
    assert any("naming 'topic_record' names a subject after its record" in p for p in problems(specs))


def test_an_unknown_type_is_reported_at_its_line_in_the_schema_file(specs_copy: SpecsCopy) -> None:
    specs = with_schemas(specs_copy(), "value: schemas/order.avsc", ORDER.replace('"int"', '"integer"'))
    assert problems(specs) == [f"{specs / 'schemas' / 'order.avsc'}:3:37: $: not a valid Avro schema: unknown type "
                               f"'shop.integer'"]


def test_broken_json_and_a_default_of_the_wrong_type_are_reported_where_they_are(specs_copy: SpecsCopy) -> None:
    specs = with_schemas(specs_copy(), "value: schemas/order.avsc", ORDER.replace('"int"}', '"int"'))
    [found] = problems(specs)
    assert found.startswith(f"{specs / 'schemas' / 'order.avsc'}:3:") and "not JSON" in found
    union = ORDER.replace('{"name": "qty", "type": "int"}', '{"name": "qty", "type": ["null", "int"], "default": 1}')
    [found] = problems(with_schemas(specs, "value: schemas/order.avsc", union))
    assert found.startswith(f"{specs / 'schemas' / 'order.avsc'}:3:") and "the union's first type" in found


def test_a_json_schema_is_checked_against_its_meta_schema(specs_copy: SpecsCopy) -> None:
    specs = with_schemas(specs_copy(), "value: {file: schemas/order.avsc, type: json}",
                         '{"type": "object", "properties": {"id": {"type": "string"}}}')
    [subject] = load_specs(specs).subjects
    assert subject.schema_type == "JSON"
    specs = with_schemas(specs, "value: {file: schemas/order.avsc, type: json}", '{"type": "objekt"}')
    assert any("not a valid JSON Schema" in p for p in problems(specs))


def test_a_schema_file_must_exist_below_the_specs_and_schemas_need_a_registry(specs_copy: SpecsCopy) -> None:
    specs = with_schemas(specs_copy(), "value: ../elsewhere.avsc")
    assert any("must lie below the spec file's directory" in p for p in problems(specs))
    specs = with_schemas(specs, "value: schemas/missing.avsc")
    [found] = problems(specs)
    assert found.startswith(f"{specs / 'registry.yaml'}:6:7: $.topics[0].schemas.value: cannot read schema file")
    specs = with_schemas(specs, "value: schemas/order.avsc", registry="")
    assert any("no `registry` section says where they go" in p for p in problems(specs))


def test_a_schema_file_edited_is_a_spec_set_changed(specs_copy: SpecsCopy, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KRAFTFORM_CACHE", str(tmp_path / "cache"))
    specs = with_schemas(specs_copy(), "value: schemas/order.avsc")
    assert '"int"' in load_specs(specs).subjects[0].schema
    (specs / "schemas" / "order.avsc").write_text(ORDER.replace('"int"', '"long"'))
    assert '"long"' in load_specs(specs).subjects[0].schema
