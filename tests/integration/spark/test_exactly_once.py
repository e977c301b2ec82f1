"""Durability: `kraftform consumers run` SIGKILLed twice mid-stream (the JVM with it) and restarted from its
checkpoint leaves every input record in the sink exactly once: for a Kafka sink read with read_committed, and
for a Parquet sink read by Spark, pyarrow and DuckDB, which list the directory themselves.

The third run, which finishes what the topics hold, is the same job in the shared session (kraftform's own
start from the checkpoint the killed runs left): a restart from a checkpoint is the second run's subject already,
and a third JVM per test cost 40 s on 2 cores."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pyarrow.dataset as ds
import pytest

from .conftest import Pipeline, kill_group, wait_for_line
from .test_pipelines import payments

pytestmark = pytest.mark.integration
#: Six micro-batches, the fewest that leave each kill inside the stream: the first lands in the second batch,
#: the second at the fourth's report, and the third run finishes the last two (three if batch 4's commit was lost).
RECORDS = 12_000
PER_BATCH = 2_000


def crash_twice_then_finish(pipe: Pipeline, spark: Any) -> str:
    """Kill the job 1 s into a micro-batch, then again the moment a later batch reports; then let a third run
    finish what the topics hold. Returns everything the three runs printed."""
    seen: list[str] = []
    first = pipe.start()
    wait_for_line(first, "batch 1:", 300, seen)
    time.sleep(1.0)  # inside batch 2: its records (or files) are on their way, not yet committed
    kill_group(first)
    second = pipe.start()
    wait_for_line(second, "batch 4:", 300, seen)
    kill_group(second)  # right as batch 4 is reported: Spark's own commit of it may or may not be written
    pipe.run_here(spark, log=lambda line: seen.append(line + "\n"))
    return "".join(seen)


def feed(pipe: Pipeline) -> list[dict[str, Any]]:
    sent = payments(RECORDS, seed=7)
    assert pipe.produce((pipe.inputs[i % 2], p["payment_id"], p) for i, p in enumerate(sent)) == RECORDS
    return sent


def test_kafka_sink_is_exactly_once_for_read_committed_readers_across_kills(
        pipelines: Callable[..., Pipeline], spark: Any) -> None:
    pipe = pipelines("fraud-scoring", max_offsets_per_trigger=PER_BATCH, trigger="1s")
    sent = feed(pipe)
    output = crash_twice_then_finish(pipe, spark)

    committed = pipe.read_sink("read_committed")
    keys = Counter(key for key, _ in committed)
    assert len(committed) == RECORDS and len(keys) == RECORDS and max(keys.values()) == 1, output[-3000:]
    assert {k.decode() for k in keys if k is not None} == {p["payment_id"] for p in sent}
    assert all(json.loads(value)["payment_id"] == key.decode() for key, value in committed if key is not None)
    # What the crashed transactions wrote is in the log, aborted: a read_uncommitted reader sees at least as much.
    assert len(pipe.read_sink("read_uncommitted")) >= RECORDS


PROJECTION = "SELECT payment_id, account_id, amount, topic FROM input"


def test_parquet_sink_is_exactly_once_for_every_reader_across_kills(pipelines: Callable[..., Pipeline],
                                                                     spark: Any) -> None:
    pipe = pipelines("fraud-scoring", max_offsets_per_trigger=PER_BATCH, trigger="1s", query=PROJECTION,
                     sink={"type": "parquet", "path": "payments"})
    sent = feed(pipe)
    output = crash_twice_then_finish(pipe, spark)
    out: Path = pipe.data_dir / "payments"
    expected = {p["payment_id"] for p in sent}

    by_spark = spark.read.parquet(str(out)).select("payment_id").collect()
    by_pyarrow = ds.dataset(out, format="parquet", partitioning="hive").to_table(columns=["payment_id"])
    by_duckdb = duckdb.execute(f"SELECT payment_id FROM read_parquet('{out}/**/*.parquet')").fetchall()
    for reader, ids in (("spark", [r[0] for r in by_spark]), ("pyarrow", by_pyarrow.column(0).to_pylist()),
                        ("duckdb", [r[0] for r in by_duckdb])):
        counts = Counter(ids)
        assert len(ids) == RECORDS and max(counts.values()) == 1 and set(counts) == expected, (reader, output[-3000:])
    # Nothing half-written is left where readers look: every entry is a whole batch directory.
    assert all(p.name.startswith("batch=") and p.is_dir() for p in out.iterdir())
