"""The feed makes records a consumer's schema parses, shaped like production's."""

from __future__ import annotations

import io
import itertools
import json
from collections import Counter
from typing import Any

import fastavro

from kraftform.declared import load_specs
from kraftform.spark.feed import records
from kraftform.specset.model import ConsumerSpec, SinkSpec, ValueFormat

from ...conftest import EXAMPLE_SPECS

SPECS = load_specs(EXAMPLE_SPECS)


def take(name: str, n: int, seed: int = 1) -> list[tuple[str, str | None, str | bytes]]:
    consumer = next(c for c in SPECS.consumers if c.name == name)
    return list(itertools.islice(records(consumer, seed), n))


def test_payments_have_unique_keys_repeating_accounts_and_mostly_home_cards() -> None:
    made = take("fraud-scoring", 2000)
    values = [json.loads(v) for _, _, v in made]
    assert {t for t, _, _ in made} == {"payments.transactions.v1", "payments.authorizations.v1"}
    assert len({k for _, k, _ in made}) == 2000
    assert all(k == v["payment_id"] for (_, k, _), v in zip(made, values, strict=True))
    assert len({v["account_id"] for v in values}) <= 200
    home = sum(v["country"] == v["card_country"] for v in values) / len(values)
    assert 0.85 < home < 1.0 and all(v["amount"] > 0 and v["event_time"].endswith("Z") for v in values)


def test_page_views_repeat_users_so_sessions_form() -> None:
    made = take("clickstream-sessionizer", 1000)
    users = Counter(k for _, k, _ in made)
    assert len(users) <= 200 and max(users.values()) > 2
    # Seeded: the same records every time, but for the event times, which are "now".
    def strip(made: list[tuple[str, str | None, str | bytes]]) -> list[object]:
        return [(t, k, {**json.loads(v), "event_time": None}) for t, k, v in made]

    assert strip(take("clickstream-sessionizer", 5)) == strip(take("clickstream-sessionizer", 5))


def test_an_avro_consumers_records_are_its_declared_schemas_in_the_confluent_wire_format() -> None:
    from .test_avro import PAYMENT

    consumer = ConsumerSpec("notes", ("orders.a", "orders.b"), "u", SinkSpec("noop"), "notes",
                            value=ValueFormat("avro", json.dumps(PAYMENT)))
    made = list(itertools.islice(records(consumer, 3, avro_id=42), 200))
    assert {t for t, _, _ in made} == {"orders.a", "orders.b"}
    schema = fastavro.parse_schema(PAYMENT)
    decoded: list[Any] = []
    for _, key, value in made:
        assert isinstance(value, bytes) and value[:5] == b"\0\0\0\0\x2a"  # magic byte, schema id 42
        decoded.append(fastavro.schemaless_reader(io.BytesIO(value[5:]), schema, schema))
        assert key == decoded[-1]["id"]
    assert len({d["id"] for d in decoded}) == 200  # `id` is unique: the record key
    assert all(d["card"]["brand"] in ("VISA", "MC") and len(d["card"]["digest"]) == 4 for d in decoded)
    assert list(itertools.islice(records(consumer, 3, avro_id=42), 5)) != list(
        itertools.islice(records(consumer, 4, avro_id=42), 5))
