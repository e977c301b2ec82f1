"""The change-data-capture example as the README runs it (examples/cdc, its specs unchanged): a cluster, its Kafka
objects, PostgreSQL, the Connect worker and its two connectors, then the Spark consumer, each through `kraftform`
as a user types it; the table's changes counted in the sink's file and in the consumer's Parquet, and the rows the
Parquet says exist equal to the table's."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow.dataset as ds
import pytest

from ...conftest import REPO

pytestmark = pytest.mark.integration

CDC = REPO / "examples" / "cdc"


@dataclass
class Example:
    state: Path
    env: dict[str, str]

    def kraftform(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "kraftform", *args], capture_output=True, text=True,
                              timeout=timeout, check=False, env=self.env, cwd=REPO)

    def ok(self, *args: str) -> str:
        done = self.kraftform(*args)
        assert done.returncode == 0, f"kraftform {' '.join(args)}:\n{done.stdout}{done.stderr}"
        return done.stdout

    def sql(self, text: str) -> str:
        return self.ok("postgres", "psql", text, "--state-dir", str(self.state))


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Example]:
    base = tmp_path_factory.mktemp("cdc")
    state, passwords = base / "state", base / "passwords.env"
    subprocess.run([sys.executable, "-m", "kraftform", "passwords", str(CDC), "--example-env", str(passwords)],
                   check=True, capture_output=True)
    secrets = dict(line.removeprefix("export ").split("=", 1) for line in passwords.read_text().splitlines())
    ex = Example(state, {**os.environ, **secrets, "PYTHONUNBUFFERED": "1"})
    try:
        ex.ok("cluster", "up", str(CDC), "--runtime", "local", "--state-dir", str(state))
        ex.ok("apply", str(CDC), "--state-dir", str(state), "--auto-approve")
        ex.ok("postgres", "up", "--state-dir", str(state), "--schema", str(CDC / "orders.sql"))
        ex.ok("connect", "up", str(CDC), "--state-dir", str(state))
        yield ex
    finally:
        ex.kraftform("connect", "down", str(CDC), "--state-dir", str(state), "--purge")
        ex.kraftform("postgres", "down", "--state-dir", str(state))
        ex.kraftform("cluster", "down", "--state-dir", str(state), "--purge")


def test_the_orders_table_reaches_the_sink_file_and_the_spark_consumer_change_for_change(example: Example) -> None:
    example.sql("INSERT INTO orders (item, qty) SELECT 'item-' || g, g FROM generate_series(1, 100) g")
    applied = example.kraftform("connect", "apply", str(CDC), "--state-dir", str(example.state), "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert "Applied 2 changes (2 safe); the connectors are as declared." in applied.stdout
    example.sql("UPDATE orders SET qty = qty + 1 WHERE id <= 20; DELETE FROM orders WHERE id > 90; "
                "INSERT INTO orders (item, qty) VALUES ('late', 7)")
    # 100 snapshot reads, 20 updates, 10 deletes each followed by its tombstone, 1 insert.
    archive = example.state / "connect" / "cdc-connect" / "worker-0" / "orders-archive.txt"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not archive.is_file() or len(archive.read_text().splitlines()) < 141):
        time.sleep(1)
    lines = archive.read_text().splitlines()
    assert len(lines) == 141, lines[-3:]
    assert Counter(line.split(",", 1)[0] for line in lines) == {"{op=r": 100, "{op=u": 20, "{op=d": 10,
                                                                 "null": 10, "{op=c": 1}

    data = example.state.parent / "consumers"
    example.ok("consumers", "run", "order-changes", str(CDC), "--state-dir", str(example.state), "--data-dir",
               str(data), "--available-now")
    changes = ds.dataset(data / "orders" / "changes", format="parquet").to_table().to_pylist()
    assert Counter(r["op"] for r in changes) == {"r": 100, "u": 20, "d": 10, "c": 1}
    rows: dict[int, tuple[str, int]] = {}
    for change in sorted(changes, key=lambda r: r["changed_at"]):
        if change["op"] == "d":
            rows.pop(change["id"])
        else:
            rows[change["id"]] = (change["item"], change["qty"])
    table = {int(i): (item, int(qty)) for i, item, qty in
             (line.split("|") for line in example.sql("SELECT id, item, qty FROM orders").splitlines())}
    assert rows == table and len(table) == 91

    assert example.kraftform("connect", "plan", str(CDC), "--state-dir", str(example.state)).returncode == 0
    status = example.kraftform("status", str(CDC), "--state-dir", str(example.state), "--data-dir", str(data))
    assert status.returncode == 0, status.stdout + status.stderr
    assert "connector cdc-connect/orders-capture: running (declared running); task 0 running" in status.stdout
    assert "consumer group cdc-connect" not in status.stdout
