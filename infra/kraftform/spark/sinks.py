"""Sinks that write each micro-batch exactly once, whatever Spark replays after a crash.

Spark re-runs the last micro-batch when a query restarts before committing it, with the same batch id and
the same input. Its own Kafka sink then writes those records twice (at-least-once), and its Parquet file
sink leaves the crashed attempt's part files in the directory, where any reader but Spark sees them twice.
Both sinks here are `foreachBatch` functions keyed by the batch id (and the checkpoint's run id):

- `TransactionalKafkaSink`: one Kafka transaction per micro-batch. The transaction also commits, for a
  consumer group of the sink's own, an offset that records the batch id, so the batch and the record of
  it become visible together. A replayed batch whose id is already recorded is skipped; a read_committed
  reader sees each record once. The fixed transactional.id fences a zombie of the previous run.
- `ParquetBatchSink`: each micro-batch is written to a hidden staging directory beside the output, then
  renamed into place as `batch=<run>-<batch id>` (a rename is atomic on one POSIX filesystem). Readers
  (Spark, pyarrow, DuckDB, anything that lists the directory) see a batch whole or not at all, and a
  replayed batch that is already in place is skipped.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from kraftform.cluster.connection import Connection
from kraftform.errors import AuthorizationDenied, KafkaRequestFailed

#: Producer settings of a profile that librdkafka understands as the Java client does.
_PRODUCER_KEYS = ("linger.ms", "batch.size", "compression.type", "retries")
TXN_TIMEOUT_S = 60.0


def batch_dir_name(run_id: str, batch_id: int) -> str:
    return f"batch={run_id}-{batch_id:010d}"


class TransactionalKafkaSink:
    """`foreachBatch(sink)`: the batch's `key`/`value` rows in one transaction, with its batch id recorded."""

    def __init__(self, connection: Connection, topic: str, transactional_id: str, marker: tuple[str, str],
                 run_id: str, producer_settings: Mapping[str, str], log: Callable[[str], None],
                 partitions: int = 2) -> None:
        self.connection, self.topic, self.transactional_id = connection, topic, transactional_id
        #: (consumer group, topic): the group's committed offset on partition 0 of the topic records the
        #: next batch id to write; the topic is one the consumer's user may read (an input topic).
        self.marker_group, self.marker_topic = marker
        self.run_id = run_id
        self.settings = {k: v for k, v in producer_settings.items() if k in _PRODUCER_KEYS}
        self.log = log
        self.partitions = partitions
        self._producer: Producer | None = None
        self._group_metadata: Any = None
        self._next_batch = 0

    def _open(self) -> Producer:
        producer = Producer({**self.connection.librdkafka(), **self.settings, "transactional.id": self.transactional_id,
                             "enable.idempotence": True, "acks": "all",
                             # every message of a transaction is delivered or failed before the transaction times out
                             "transaction.timeout.ms": int(TXN_TIMEOUT_S * 1000),
                             "message.timeout.ms": int(TXN_TIMEOUT_S * 1000)})
        try:
            producer.init_transactions(TXN_TIMEOUT_S)  # fences the previous run's producer, aborts its open txn
            consumer = Consumer({**self.connection.librdkafka(), "group.id": self.marker_group,
                                 "enable.auto.commit": False, "isolation.level": "read_committed"})
            try:
                [committed] = consumer.committed([TopicPartition(self.marker_topic, 0)], timeout=TXN_TIMEOUT_S)
                self._group_metadata = consumer.consumer_group_metadata()
            finally:
                consumer.close()
        except KafkaException as exc:
            raise AuthorizationDenied(f"the exactly-once Kafka sink cannot start as {self.connection.username!r} "
                                      f"(transactional id {self.transactional_id!r}, group {self.marker_group!r}): "
                                      f"{exc.args[0].str()}") from None
        mine = committed.offset >= 0 and committed.metadata == self.run_id
        self._next_batch = committed.offset if mine else 0
        if mine:
            self.log(f"sink: batches before {committed.offset} are in {self.topic} already")
        return producer

    def __call__(self, frame: Any, batch_id: int) -> None:
        if self._producer is None:
            self._producer = self._open()
        if batch_id < self._next_batch:
            self.log(f"sink: batch {batch_id} was written before the restart: skipped")
            return
        producer = self._producer
        columns = set(frame.columns)
        producer.begin_transaction()
        try:
            # toLocalIterator runs one Spark job per partition: a few large partitions, not one per Kafka partition.
            rows = frame.coalesce(self.partitions).toLocalIterator(prefetchPartitions=True)
            for written, row in enumerate(rows, 1):
                value, key = row["value"], row["key"] if "key" in columns else None
                partition = row["partition"] if "partition" in columns and row["partition"] is not None else -1
                while True:
                    try:
                        producer.produce(self.topic, value=_bytes(value), key=_bytes(key), partition=partition)
                        break
                    except BufferError:
                        producer.poll(0.05)
                if written % 10_000 == 0:
                    producer.poll(0)
            producer.send_offsets_to_transaction(
                [TopicPartition(self.marker_topic, 0, batch_id + 1, metadata=self.run_id)], self._group_metadata,
                TXN_TIMEOUT_S)
            producer.commit_transaction(TXN_TIMEOUT_S)
        except KafkaException as exc:
            error = exc.args[0]
            if error.txn_requires_abort():
                producer.abort_transaction(TXN_TIMEOUT_S)
            raise KafkaRequestFailed(f"batch {batch_id} not written to {self.topic}: {error.str()}") from None
        self._next_batch = batch_id + 1

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(10)


def _bytes(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, bytes | bytearray):
        return bytes(value)
    return str(value).encode()


class ParquetBatchSink:
    """`foreachBatch(sink)`: each batch's Parquet files appear at once, under the batch's own directory."""

    def __init__(self, root: Path, run_id: str, log: Callable[[str], None]) -> None:
        self.root, self.run_id, self.log = root, run_id, log
        self.staging = root.parent / f".{root.name}.staging"

    def __call__(self, frame: Any, batch_id: int) -> None:
        final = self.root / batch_dir_name(self.run_id, batch_id)
        if final.exists():
            self.log(f"sink: batch {batch_id} was written before the restart: skipped")
            return
        frame.persist()
        try:
            if frame.isEmpty():
                return
            staged = self.staging / final.name
            shutil.rmtree(staged, ignore_errors=True)  # a crashed attempt's leftovers
            frame.write.mode("overwrite").parquet(str(staged))
        finally:
            frame.unpersist()
        self.root.mkdir(parents=True, exist_ok=True)
        os.rename(staged, final)
        _fsync_dir(self.root)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
