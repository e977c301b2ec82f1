"""The Avro consumer's decoding (`spark.job.avro_decoded`) in the shared Spark session with spark-avro: records of
two writer versions in the Confluent wire format, each resolved to the declared schema; a record of an unknown id,
or without the header, stops the query in its own words rather than become a row of nulls. The same expression
reads Kafka end to end in `tests/integration/registry/test_spark_avro.py`."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from kraftform.declared import load_specs
from kraftform.spark.avro import encoder
from kraftform.spark.job import avro_decoded, explain_failure, spark_error
from kraftform.spark.settings import job_settings
from kraftform.specset.model import ValueFormat

from ...conftest import EXAMPLE_SPECS

pytestmark = pytest.mark.integration

V1: dict[str, Any] = {"type": "record", "name": "Payment", "namespace": "shop", "fields": [
    {"name": "payment_id", "type": "string"}, {"name": "amount", "type": "double"},
    {"name": "note", "type": "string"}]}
V2 = {**V1, "fields": [*V1["fields"], {"name": "currency", "type": "string", "default": "EUR"}]}


def _frame(spark: Any, values: list[bytes | None]) -> Any:
    return spark.createDataFrame([(v, "payments.avro", i) for i, v in enumerate(values)],
                                 "value binary, topic string, offset bigint")


def test_each_writers_records_are_read_as_the_declared_schema_and_the_rest_stops_the_query(spark: Any) -> None:
    specs = load_specs(EXAMPLE_SPECS)
    example = specs.consumers[0]
    consumer = dataclasses.replace(example, value=ValueFormat("avro", json.dumps(V2)))
    settings = job_settings(example, specs)
    settings = dataclasses.replace(settings, facts=dataclasses.replace(settings.facts, reads=("payment_id",
                                                                                            "currency")),
                                   avro_writers={"7": json.dumps(V1), "8": json.dumps(V2)})
    old, new = encoder(json.dumps(V1), 7), encoder(json.dumps(V2), 8)
    values = [old({"payment_id": "p-1", "amount": 1.5, "note": "x"}), None,
              new({"payment_id": "p-2", "amount": 2.5, "note": "y", "currency": "USD"})]
    rows = _frame(spark, values).select(avro_decoded(consumer, settings).alias("v")).select("v.*").collect()
    assert [r.asDict() for r in rows] == [{"payment_id": "p-1", "currency": "EUR"},  # version 1: the default
                                          {"payment_id": None, "currency": None},  # a tombstone
                                          {"payment_id": "p-2", "currency": "USD"}]

    unknown = encoder(json.dumps(V2), 9)({"payment_id": "p-3", "amount": 0.0, "note": "", "currency": "GBP"})
    for value, says in ((unknown, f"consumer {consumer.name}: the record of topic payments.avro at offset 1 was "
                                  f"written with schema id 9, registered after the job started (it knows 7, 8)"),
                        (b'{"payment_id": "p-4"}', f"consumer {consumer.name}: the record of topic payments.avro "
                                                   f"at offset 1 is not in the Confluent wire format")):
        with pytest.raises(Exception) as raised:  # Spark's own exception class, checked below
            _frame(spark, [values[0], value]).select(avro_decoded(consumer, settings).alias("v")).collect()
        assert spark_error(raised.value)
        assert str(explain_failure(raised.value, consumer)).startswith(says), str(raised.value)[:2000]
