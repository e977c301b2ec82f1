"""Change data capture as code: Debezium's PostgreSQL connector (declared as a plugin with its checksum) capturing a
real PostgreSQL table into Kafka through a worker `kraftform connect up` started, its database password a
`{env: NAME}` reference the worker resolves (never in the plan or the REST API); inserts, updates and deletes
counted on both sides, across a SIGKILL of the worker."""

from __future__ import annotations

import json
import os
import signal
import time
import uuid
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, TopicPartition

from kraftform.runtime.postgres import LocalPostgres

from .conftest import PG_PASSWORD_ENV, POSTGRES_CONNECTOR, Connected

pytestmark = pytest.mark.integration


def _changes(connected: Connected, done: Callable[[list[tuple[int, str | None]]], bool],
             timeout: float = 120) -> list[tuple[int, str | None]]:
    """(id, op) of every record on the capture topic (None for a tombstone), read from the start until `done`
    holds of them; Debezium delivers at least once, so after a crash some arrive twice."""
    consumer = Consumer({**connected.cluster.client(), "group.id": f"cdc-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": "false"})
    consumer.assign([TopicPartition(Connected.cdc, 0, 0)])
    seen: list[tuple[int, str | None]] = []
    deadline = time.monotonic() + timeout
    try:
        while not done(seen) and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None or message.error():
                continue
            key = json.loads(message.key() or b"{}")
            raw = message.value()
            seen.append((int(key["id"]), json.loads(raw)["op"] if raw else None))
    finally:
        consumer.close()
    return seen


def _rows(changes: list[tuple[int, str | None]]) -> set[int]:
    """The rows the change log says exist: read or created, and not deleted since."""
    rows: set[int] = set()
    for row, op in changes:
        if op in ("r", "c"):
            rows.add(row)
        elif op == "d":
            rows.discard(row)
    return rows


def test_debezium_captures_every_insert_update_and_delete_and_loses_none_across_a_worker_sigkill(
        connected: Connected, postgres: LocalPostgres) -> None:
    def sql(text: str) -> str:
        return postgres.psql(text, database="orders")

    sql("INSERT INTO orders (item, qty) SELECT 'item-' || g, g FROM generate_series(1, 100) g")
    connected.connect["connectors"].append({
        "name": "orders-cdc", "class": POSTGRES_CONNECTOR, "type": "source", "topics": [Connected.cdc],
        "config": {"database.hostname": postgres.host, "database.port": postgres.port, "database.user": "cdc",
                   "database.password": {"env": PG_PASSWORD_ENV}, "database.dbname": "orders",
                   "topic.prefix": "cdc", "table.include.list": "public.orders", "plugin.name": "pgoutput",
                   "slot.name": "kraftform_orders", "publication.autocreate.mode": "filtered"}})
    connected.write()
    # Its grant to write the capture topic is a Kafka object, made by `kraftform apply`: until then, a problem.
    ungranted = connected.kraftform("plan")
    assert ungranted.returncode == 1, ungranted.stdout + ungranted.stderr
    assert ("connector 'orders-cdc': its grants are not in Kafka yet (User:orders-connect: allow describe on topic "
            "'cdc.public.orders'") in ungranted.stdout, ungranted.stdout
    connected.apply_kafka()
    # The workers hold only the variables their connectors declared when they started: this one's is new.
    unstarted = connected.kraftform("plan")
    assert unstarted.returncode == 1 and (f"connector 'orders-cdc': reads {PG_PASSWORD_ENV} from the environment, "
                                          "which the running workers were not started with") in unstarted.stdout
    assert "`kraftform connect up` restarts them with it" in unstarted.stdout, unstarted.stdout
    started = connected.kraftform("up")
    assert started.returncode == 0, started.stdout + started.stderr
    planned = connected.kraftform("plan")
    assert planned.returncode == 2, planned.stdout + planned.stderr
    assert os.environ[PG_PASSWORD_ENV] not in planned.stdout + planned.stderr
    applied = connected.kraftform("apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    config = connected.rest("GET", "/connectors/orders-cdc/config")
    assert config["database.password"] == "${env:" + PG_PASSWORD_ENV + "}"
    assert connected.kraftform("plan").returncode == 0

    sql("INSERT INTO orders (item, qty) SELECT 'late-' || g, g FROM generate_series(1, 50) g; "
        "UPDATE orders SET qty = qty + 1000 WHERE id <= 20; DELETE FROM orders WHERE id > 140")
    # 100 snapshot reads, 50 creates, 20 updates, 10 deletes each followed by its tombstone.
    seen = _changes(connected, lambda changes: len(changes) >= 190)
    ops = [op for _, op in seen]
    assert (ops.count("r"), ops.count("c"), ops.count("u"), ops.count("d"), ops.count(None)) == (100, 50, 20, 10, 10)
    assert _rows(seen) == {int(i) for i in sql("SELECT id FROM orders").split()}

    # The worker SIGKILLed; rows written while it is down are captured once it is up again.
    os.kill(int(connected.worker()["pid"]), signal.SIGKILL)
    sql("INSERT INTO orders (item, qty) SELECT 'while-down-' || g, g FROM generate_series(1, 30) g")
    down = connected.kraftform("status")
    assert down.returncode == 2 and "0 of 1 worker(s) running" in down.stdout, down.stdout + down.stderr
    up = connected.kraftform("up")
    assert up.returncode == 0, up.stdout + up.stderr
    assert connected.kraftform("apply", "--auto-approve").returncode == 0  # running as declared, nothing to do
    in_table = {int(i) for i in sql("SELECT id FROM orders").split()}
    assert len(in_table) == 170
    assert _rows(_changes(connected, lambda changes: _rows(changes) == in_table, 180)) == in_table
