"""Realistic input for a consumer, made from its value schema: `kraftform consumers feed NAME --rate R`.

Values follow the column names, so the example pipelines see data shaped like production's: ids of people,
accounts, cards and merchants repeat from a pool (sessions and per-key aggregates form), other ids are
unique; amounts are log-normal money; countries, currencies, devices and pages come from short lists, with a
country mismatch now and then; event times are "now" with a little jitter. The first unique id column, else
the first id column, is the record key. Pure: a seeded `random.Random` makes the same records every time.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

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


def records(consumer: ConsumerSpec, seed: int = 0, clock: Callable[[], datetime] | None = None
            ) -> Iterator[tuple[str, str | None, str]]:
    """Endless (topic, key, JSON value) records for the consumer's topics, round robin."""
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
