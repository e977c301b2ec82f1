"""What Kafka's own test tools print, read into numbers.

VerifiableProducer and VerifiableConsumer print one JSON object per event; ProducerPerformance prints a
summary sentence and ConsumerPerformance a CSV row. Reading them here, apart from the runs, lets unit tests
pin the formats of the pinned Kafka release.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kraftform.errors import KafkaRequestFailed


def events(lines: Iterable[str]) -> Iterable[dict[str, Any]]:
    """The JSON events among a tool's stdout lines (anything else, such as a stray log line, is skipped)."""
    for line in lines:
        line = line.strip()
        if line.startswith("{"):
            try:
                event = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(event, dict) and "name" in event:
                yield event


@dataclass
class ProducerLog:
    """What a VerifiableProducer reported: each acknowledged value with the time of its acknowledgement."""

    acked: dict[int, int] = field(default_factory=dict)
    errors: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)
    sent: int | None = None
    finished: bool = False

    def add(self, event: dict[str, Any]) -> None:
        name = event["name"]
        if name == "producer_send_success":
            self.acked[int(event["value"])] = int(event["timestamp"])
        elif name == "producer_send_error":
            self.errors += 1
            kind = str(event.get("exception", "unknown")).rsplit(".", 1)[-1]
            self.error_kinds[kind] = self.error_kinds.get(kind, 0) + 1
        elif name == "tool_data":
            self.sent = int(event["sent"])
        elif name == "shutdown_complete":
            self.finished = True

    def acked_between(self, start_ms: int, end_ms: int) -> int:
        return sum(1 for t in self.acked.values() if start_ms <= t < end_ms)


def consumed_values(lines: Iterable[str]) -> list[int]:
    """Every value a `VerifiableConsumer --verbose` read, in order, repeats included."""
    return [int(e["value"]) for e in events(lines) if e["name"] == "record_data"]


@dataclass(frozen=True)
class ProducerRun:
    """ProducerPerformance's closing summary."""

    records: int
    records_per_s: float
    mb_per_s: float
    avg_ms: float
    max_ms: float
    p50_ms: float
    p95_ms: float
    p99_ms: float
    p999_ms: float


_SUMMARY = re.compile(
    r"(?P<records>\d+) (?:steady state )?records sent, (?P<rps>[\d.]+) records/sec \((?P<mbps>[\d.]+) MB/sec\), "
    r"(?P<avg>[\d.]+) ms avg latency, (?P<max>[\d.]+) ms max latency, (?P<p50>[\d.]+) ms 50th, "
    r"(?P<p95>[\d.]+) ms 95th, (?P<p99>[\d.]+) ms 99th, (?P<p999>[\d.]+) ms 99\.9th")


def producer_summary(output: str) -> ProducerRun:
    """The last summary line of ProducerPerformance (the periodic lines before it have no percentiles): the
    steady-state one when the run had `--warmup-records` (without the first sends' metadata and connection
    set-up), else the whole run's."""
    found = list(_SUMMARY.finditer(output))
    if not found:
        raise KafkaRequestFailed(f"ProducerPerformance printed no summary:\n{output[-1000:]}")
    m = found[-1]
    return ProducerRun(int(m["records"]), float(m["rps"]), float(m["mbps"]), float(m["avg"]), float(m["max"]),
                       float(m["p50"]), float(m["p95"]), float(m["p99"]), float(m["p999"]))


@dataclass(frozen=True)
class ConsumerRun:
    """ConsumerPerformance's row: the whole run and its fetch phase (without the group join)."""

    mb: float
    mb_per_s: float
    records: int
    records_per_s: float
    fetch_mb_per_s: float
    fetch_records_per_s: float


def consumer_summary(output: str) -> ConsumerRun:
    """The CSV row after ConsumerPerformance's header: start, end, MB, MB/s, records, records/s,
    rebalance ms, fetch ms, fetch MB/s, fetch records/s."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for i, line in enumerate(lines):
        if line.startswith("start.time") and i + 1 < len(lines):
            cells = [c.strip() for c in lines[i + 1].split(",")]
            if len(cells) >= 10:
                return ConsumerRun(float(cells[2]), float(cells[3]), int(cells[4]), float(cells[5]),
                                   float(cells[8]), float(cells[9]))
    raise KafkaRequestFailed(f"ConsumerPerformance printed no result row:\n{output[-1000:]}")
