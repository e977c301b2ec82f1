"""The shop's Spark pipeline, tested before it is deployed: the declared consumer run by kraftform's
`kafka_consumer` fixture against the test cluster, on records this test produces."""

from __future__ import annotations

from typing import Any


def test_the_pipeline_writes_each_euro_order_in_cents_once(kafka_consumer: Any) -> None:
    rows = kafka_consumer("order-totals", [
        {"order_id": "o-1", "amount": 12.5, "currency": "EUR"},
        {"order_id": "o-2", "amount": 3.0, "currency": "USD"},
        {"order_id": "o-3", "amount": 0.99, "currency": "EUR"},
    ])
    assert sorted(rows, key=lambda r: r["key"]) == [
        {"key": "o-1", "value": {"order_id": "o-1", "cents": 1250}},
        {"key": "o-3", "value": {"order_id": "o-3", "cents": 99}},
    ]
    # A second run continues from its checkpoint: only what is new comes out.
    assert kafka_consumer("order-totals", [{"order_id": "o-4", "amount": 1.0, "currency": "EUR"}]) == [
        {"key": "o-4", "value": {"order_id": "o-4", "cents": 100}}]
