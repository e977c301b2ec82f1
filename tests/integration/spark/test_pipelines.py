"""The example pipelines do their work: records produced to the input topics come out of the sink with the
values and aggregates computed here, independently, in Python."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow.dataset as ds
import pytest

from .conftest import Pipeline

pytestmark = pytest.mark.integration

BASE = datetime(2026, 1, 5, 0, 0, tzinfo=UTC)


def iso(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def expected_score(payment: dict[str, Any]) -> float:
    """specs/consumers.yaml's fraud rule, written again in Python."""
    amount = payment["amount"]
    score = 0.5 if amount >= 5000 else 0.2 if amount >= 1000 else 0.0
    score += 0.3 if payment["country"] != payment["card_country"] else 0.0
    score += 0.2 if datetime.fromisoformat(payment["event_time"]).hour < 6 else 0.0
    return round(min(1.0, score), 2)


def payments(count: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [{"payment_id": f"pay-{seed}-{i:06d}", "account_id": f"acct-{rng.randrange(50)}",
             "amount": round(rng.choice([12.5, 999.99, 1000.0, 4999.0, 5000.0, 12000.0]) + rng.random(), 2),
             "currency": "EUR", "country": rng.choice(["FR", "DE"]), "card_country": rng.choice(["FR", "DE"]),
             "merchant": "m-1", "event_time": iso(BASE + timedelta(minutes=rng.randrange(24 * 60)))}
            for i in range(count)]


def test_fraud_scoring_scores_every_payment_once(pipelines: Callable[..., Pipeline], spark: Any) -> None:
    pipe = pipelines("fraud-scoring")
    sent = payments(3000, seed=1)
    pipe.produce((pipe.inputs[i % 2], p["payment_id"], p) for i, p in enumerate(sent))
    pipe.run_here(spark)

    records = pipe.read_sink()
    scored = {key.decode(): json.loads(value) for key, value in records if key is not None}
    assert len(records) == len(scored) == len(sent)
    for i, payment in enumerate(sent):
        out = scored[payment["payment_id"]]
        assert out["score"] == pytest.approx(expected_score(payment)), payment
        assert out["source"] == pipe.inputs[i % 2] and out["account_id"] == payment["account_id"]
    assert {o["score"] for o in scored.values()} >= {0.0, 0.2, 0.5, 0.7, 1.0}  # every rule fired somewhere


def page_views(users: int, seed: int) -> list[dict[str, Any]]:
    """Visits of each user: bursts of views a few minutes apart, bursts separated by more than 30 minutes."""
    rng = random.Random(seed)
    views = []
    for u in range(users):
        at = BASE + timedelta(minutes=rng.randrange(60))
        for _burst in range(rng.randint(1, 3)):
            for _ in range(rng.randint(1, 6)):
                views.append({"user_id": f"user-{u:03d}", "url": f"/p/{rng.randrange(9)}", "referrer": "",
                              "device": rng.choice(["mobile", "desktop"]), "event_time": iso(at)})
                at += timedelta(minutes=rng.randint(1, 20))
            at += timedelta(minutes=rng.randint(45, 90))
    return views


def sessions_of(views: list[dict[str, Any]], gap: timedelta) -> set[tuple[str, datetime, datetime, int, int]]:
    """Spark's session windows, computed here: a session ends `gap` after its last view."""
    by_user: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for each in views:
        by_user[each["user_id"]].append(each)
    out = set()
    for user, items in by_user.items():
        items.sort(key=lambda v: v["event_time"])
        current: list[dict[str, Any]] = []
        view: dict[str, Any] | None
        for view in [*items, None]:
            at = None if view is None else datetime.fromisoformat(view["event_time"])
            if current and (at is None or at >= datetime.fromisoformat(current[-1]["event_time"]) + gap):
                start = datetime.fromisoformat(current[0]["event_time"])
                end = datetime.fromisoformat(current[-1]["event_time"]) + gap
                out.add((user, start, end, len(current), sum(v["device"] == "mobile" for v in current)))
                current = []
            if view is not None:
                current.append(view)
    return out


def test_sessionizer_writes_each_closed_session_once_as_parquet(pipelines: Callable[..., Pipeline],
                                                                 spark: Any) -> None:
    pipe = pipelines("clickstream-sessionizer")
    views = page_views(40, seed=2)
    pipe.produce((pipe.inputs[0], v["user_id"], v) for v in views)
    # A view far later moves the watermark (10 minutes behind the latest event) past every session above...
    late = {"user_id": "user-zzz", "url": "/", "referrer": "", "device": "desktop",
            "event_time": iso(BASE + timedelta(hours=8))}
    pipe.produce([(pipe.inputs[0], "user-zzz", late)])
    pipe.run_here(spark)
    # ... and the next micro-batch writes the sessions it closed.
    pipe.produce([(pipe.inputs[0], "user-zzz", {**late, "event_time": iso(BASE + timedelta(hours=8, seconds=1))})])
    pipe.run_here(spark)

    table = ds.dataset(pipe.data_dir / "clickstream" / "sessions", format="parquet", partitioning="hive").to_table()
    rows = table.to_pylist()
    got = {(r["user_id"], r["session_start"].replace(tzinfo=UTC), r["session_end"].replace(tzinfo=UTC),
            r["page_views"], r["mobile_views"]) for r in rows}
    expected = sessions_of(views, timedelta(minutes=30))
    assert len(rows) == len(got) == len(expected) > 40
    assert got == expected
