"""One consumer's run, start to stop: preflight, checkpoint, Spark session, query, signals, heartbeat.

`kraftform consumers run` (a terminal, a container, `timeout`, systemd) only parses its arguments and prints
what this reports. A stop request (SIGINT or SIGTERM, to this process alone as `docker stop` sends it, or to
its whole process group as a terminal and `timeout` do) stops the query between micro-batches, then the JVM,
and the run ends normally: one line, no trace.
"""

from __future__ import annotations

import json
import signal
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kraftform.cluster.connection import Connection
from kraftform.kafka.clients import check_read_access
from kraftform.monitoring.scrape import spark_target
from kraftform.spark.checkpoint import prepare
from kraftform.spark.job import (
    explain_failure,
    placement,
    run_until_stopped,
    spark_error,
    spark_session,
    start_query,
)
from kraftform.spark.settings import JobSettings
from kraftform.specset.model import ConsumerSpec

Log = Callable[[str], None]
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def volatile_root(path: Path) -> str | None:
    """The temporary-files root `path` lies under, if any (a reboot may empty it)."""
    for root in (Path(tempfile.gettempdir()), Path("/tmp"), Path("/dev/shm"), Path("/run")):
        if path.resolve().is_relative_to(root.resolve()):
            return str(root)
    return None


@contextmanager
def _jvm_ignoring(signals: tuple[signal.Signals, ...]) -> Iterator[None]:
    """While the JVM starts, these signals are ignored: a child inherits an ignored signal, and the JVM leaves
    one alone (pyspark itself starts it with SIGINT ignored). A SIGTERM sent to the process group then no
    longer kills the JVM under a running query; this process takes it and stops the query first."""
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in signals}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run_consumer(consumer: ConsumerSpec, settings: JobSettings, connection: Connection, data_dir: Path, log: Log,
                 *, allow_reset: bool = False, available_now: bool = False, heartbeat: Path | None = None) -> bool:
    """Run the consumer until its query ends (available-now) or a stop signal; True if a signal stopped it. A
    failed query raises its cause as a KraftformError. `heartbeat` is removed first (an earlier run's must not
    make this one look healthy) and touched while the query runs, once a micro-batch has finished."""
    if heartbeat is not None:
        heartbeat.unlink(missing_ok=True)
    where = placement(consumer, data_dir)
    check_read_access(connection, consumer.topics, f"{consumer.group_id_prefix}-preflight")  # before any file
    meta = prepare(where.checkpoint, consumer, settings.facts, allow_reset)
    log(f"{settings.trigger}, {'exactly-once' if settings.exactly_once else 'at-least-once'} {consumer.sink.type} "
        f"sink, checkpoint {where.checkpoint}")
    for note in settings.notes:
        log(note)
    volatile = volatile_root(where.checkpoint)
    if settings.exactly_once and volatile:
        log(f"warning: the checkpoint is under {volatile}, which a reboot may empty; the exactly-once record of "
            f"what was written lives there: give --data-dir (or checkpoint) durable storage")
    with _jvm_ignoring(STOP_SIGNALS):
        spark = spark_session(settings, data_dir)
    # After the session exists: pyspark installs its own SIGINT handler then (it cancels every job, mid-write).
    # Ours asks the query to stop between micro-batches instead.
    stopping: list[int] = []
    for sig in STOP_SIGNALS:
        signal.signal(sig, lambda number, _frame: stopping.append(number))
    announced = announce_metrics(spark, consumer, data_dir)
    try:
        query = _start(spark, consumer, settings, connection, where, meta, log, available_now)
        run_until_stopped(query, consumer, log, lambda: bool(stopping), heartbeat=heartbeat)
    finally:
        if announced is not None:
            announced.unlink(missing_ok=True)
        spark.stop()
    return bool(stopping)


def announce_metrics(spark: Any, consumer: ConsumerSpec, data_dir: Path) -> Path | None:
    """Where this run's driver serves its Prometheus metrics, in a file Prometheus discovers targets from
    (`data_dir/prometheus/<consumer>.json`; `kraftform monitoring up` watches it); removed when the run ends."""
    url = spark.sparkContext.uiWebUrl
    if not url:
        return None
    path = data_dir / "prometheus" / f"{consumer.name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    staged = path.with_suffix(".tmp")
    staged.write_text(json.dumps(spark_target(consumer.name, url.split("://", 1)[-1].rstrip("/"))))
    staged.rename(path)  # Prometheus never reads half a file
    return path


def _start(spark: Any, consumer: ConsumerSpec, *args: Any) -> Any:
    try:
        return start_query(spark, consumer, *args)
    except Exception as exc:  # Spark's analysis of the query (a type it refuses, say): the cause, named
        if spark_error(exc):
            raise explain_failure(exc, consumer) from None
        raise
