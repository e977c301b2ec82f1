"""Realistic input for a consumer, made from its value schema: `kraftform consumers feed NAME --rate R`.

Values follow the column names, so the example pipelines see data shaped like production's: ids of people,
accounts, cards and merchants repeat from a pool (sessions and per-key aggregates form), other ids are
unique; amounts are log-normal money; countries, currencies, devices and pages come from short lists, with a
country mismatch now and then; event times are "now" with a little jitter. The first unique id column, else
the first id column, is the record key. An Avro consumer's records are its topics' declared schema's, in the
Confluent wire format with the id the registry gave that schema. Pure: a seeded `random.Random` makes the same
records every time.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from kraftform.spark import avro
from kraftform.spark.query import parse_schema
from kraftform.specset.model import ConsumerSpec

REPEATING_IDS = ("user", "account", "customer", "card", "merchant", "session", "device", "visitor")
COUNTRIES = ("FR", "DE", "US", "GB", "ES", "IT", "NL", "BR", "IN", "JP")
CHOICES: dict[str, tuple[str, ...]] = {
    "currency": ("EUR", "USD", "GBP", "JPY"),
    "device": ("desktop", "mobile", "mobile", "tablet"),
    "url": tuple(f"/{section}/{i}" for section in ("products", "search", "cart", "blog") for i in range(12)),
    "referrer": ("", "https://search.example/", "https://social.example/", "newsletter"),
    "merchant": tuple(f"merchant-{i:03d}" for i in range(40)),
    "status": ("ok", "ok", "ok", "declined"),
}
POOL = 200


def _value_maker(column: str, kind: str, rng: random.Random) -> Callable[[datetime], object]:
    name, kind = column.lower(), kind.upper()
    if kind in ("TIMESTAMP", "TIMESTAMP_NTZ") or name.endswith(("_time", "_at")) or name == "ts":
        return lambda now: (now - timedelta(milliseconds=rng.randint(0, 2000))).strftime("%Y-%m-%dT%H:%M:%S.%f")[
            :-3] + "Z"
    if name.endswith("_id") or name == "id":
        if name.startswith(REPEATING_IDS):
            prefix = name.removesuffix("_id")
            return lambda _now: f"{prefix}-{rng.randrange(POOL):04d}"
        return lambda _now: uuid.UUID(int=rng.getrandbits(128)).hex
    for key, values in CHOICES.items():
        if key in name:
            return lambda _now, values=values: rng.choice(values)  # type: ignore[misc]
    if "country" in name:
        return lambda _now: rng.choice(COUNTRIES)
    if kind in ("DOUBLE", "FLOAT") or kind.startswith("DECIMAL"):
        if any(word in name for word in ("amount", "price", "total", "value")):
            return lambda _now: round(min(50_000.0, rng.lognormvariate(4.0, 1.4)), 2)
        return lambda _now: round(rng.uniform(0, 100), 3)
    if kind in ("INT", "BIGINT", "LONG", "SMALLINT", "TINYINT"):
        return lambda _now: rng.randint(0, 1000)
    if kind == "BOOLEAN":
        return lambda _now: rng.random() < 0.5
    return lambda _now: rng.choice(("alpha", "beta", "gamma", "delta"))


def records(consumer: ConsumerSpec, seed: int = 0, clock: Callable[[], datetime] | None = None,
            avro_id: int | None = None) -> Iterator[tuple[str, str | None, str | bytes]]:
    """Endless (topic, key, value) records for the consumer's topics, round robin: JSON text, the raw string, or
    (`avro_id`: the registry's id of the declared schema) Avro in the Confluent wire format."""
    if consumer.value.format == "avro":
        if avro_id is None or consumer.value.schema is None:
            raise ValueError("Avro records need the declared schema and its id in the registry")
        yield from _avro_records(consumer, consumer.value.schema, avro_id, random.Random(seed),
                                 clock or (lambda: datetime.now(UTC)))
        return
    rng = random.Random(seed)
    now = clock or (lambda: datetime.now(UTC))
    schema = parse_schema(consumer.value.schema) if consumer.value.schema else {"value": "STRING"}
    makers = {c: _value_maker(c, k, rng) for c, k in schema.items()}
    ids = [c for c in schema if c.lower().endswith("_id") or c.lower() == "id"]
    unique = [c for c in ids if not c.lower().startswith(REPEATING_IDS)]
    key_column = (unique or ids or [None])[0]  # type: ignore[list-item]
    countries = [c for c in schema if "country" in c.lower()]
    index = 0
    while True:
        at = now()
        value = {c: make(at) for c, make in makers.items()}
        if len(countries) > 1 and rng.random() < 0.9:  # most cards are used at home
            for other in countries[1:]:
                value[other] = value[countries[0]]
        topic = consumer.topics[index % len(consumer.topics)]
        index += 1
        key = None if key_column is None else str(value[key_column])
        yield topic, key, json.dumps(value) if consumer.value.format == "json" else str(next(iter(value.values())))


def _avro_maker(schema: Any, name: str, rng: random.Random, named: dict[str, Any]
                ) -> Callable[[datetime], object]:
    """A value of an Avro type, as fastavro writes it, shaped by the field's name as `_value_maker` shapes JSON."""
    if isinstance(schema, list):
        first = next((m for m in schema if m != "null"), "null")
        return _avro_maker(first, name, rng, named)
    if isinstance(schema, str):
        if schema in named:
            return _avro_maker(named[schema], name, rng, named)
        schema = {"type": schema}
    kind, logical = schema["type"], schema.get("logicalType")
    if isinstance(kind, (dict, list)):
        return _avro_maker(kind, name, rng, named)
    if "name" in schema and kind in ("record", "enum", "fixed"):
        named[schema["name"]] = schema
        if schema.get("namespace"):
            named[f"{schema['namespace']}.{schema['name']}"] = schema
    if logical in ("timestamp-millis", "timestamp-micros", "local-timestamp-millis", "local-timestamp-micros"):
        return lambda now: now - timedelta(milliseconds=rng.randint(0, 2000))
    if logical == "date":
        return lambda now: now.date()
    if logical == "decimal":
        scale = schema.get("scale", 0)
        return lambda _now: Decimal(rng.randint(0, 10 ** min(schema["precision"], 9) - 1)).scaleb(-scale)
    if kind == "record":
        fields = [(f["name"], _avro_maker(f["type"], f["name"], rng, named)) for f in schema["fields"]]
        return lambda now: {field: make(now) for field, make in fields}
    if kind == "enum":
        return lambda _now: rng.choice(schema["symbols"])
    if kind == "array":
        item = _avro_maker(schema["items"], name, rng, named)
        return lambda now: [item(now) for _ in range(rng.randint(1, 3))]
    if kind == "map":
        value = _avro_maker(schema["values"], name, rng, named)
        return lambda now: {f"k{i}": value(now) for i in range(rng.randint(1, 3))}
    if kind in ("bytes", "fixed"):
        size = schema.get("size", 8)
        return lambda _now: rng.randbytes(size)
    if kind == "null":
        return lambda _now: None
    if kind == "boolean":
        return lambda _now: rng.random() < 0.5
    if kind in ("int", "long"):
        if kind == "long" and name.lower().endswith(("_time", "_at", "_ms")):
            return lambda now: int(now.timestamp() * 1000) - rng.randint(0, 2000)
        return lambda _now: rng.randint(0, 1000)
    made = _value_maker(name, "DOUBLE" if kind in ("float", "double") else "STRING", rng)
    if kind in ("float", "double"):
        return lambda now: v if isinstance(v := made(now), float) else rng.uniform(0, 100)
    return lambda now: str(made(now))


def _avro_records(consumer: ConsumerSpec, text: str, avro_id: int, rng: random.Random,
                  now: Callable[[], datetime]) -> Iterator[tuple[str, str | None, bytes]]:
    document = json.loads(text)
    make, encode = _avro_maker(document, "", rng, {}), avro.encoder(text, avro_id)
    ids = [f["name"] for f in document["fields"] if f["name"].lower().endswith("_id") or f["name"].lower() == "id"]
    key_field = next((f for f in ids if not f.lower().startswith(REPEATING_IDS)), ids[0] if ids else None)
    index = 0
    while True:
        value = make(now())
        assert isinstance(value, dict)
        topic = consumer.topics[index % len(consumer.topics)]
        index += 1
        yield topic, None if key_field is None else str(value[key_field]), encode(value)
