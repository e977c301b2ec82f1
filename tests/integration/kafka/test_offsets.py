"""`kraftform groups reset` against a real cluster of its own (one combined node with the example specs applied,
started through `kraftform.testing`): a reset to a time replays exactly the records after it, skipping records
waits for --allow-destructive, and a group with an active member is refused with nothing moved."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kraftform.testing.cluster import EphemeralCluster, ephemeral_cluster

from ...conftest import EXAMPLE_SPECS

pytestmark = pytest.mark.integration

TOPIC = "payments.transactions.v1"
GROUP = "legacy-billing"  # granted by a literal ACL in the example specs
RECORDS = 30


@pytest.fixture(scope="module")
def cluster() -> Iterator[EphemeralCluster]:
    with ephemeral_cluster(EXAMPLE_SPECS, "fast") as started:
        yield started


@pytest.fixture(scope="module")
def first_ms(cluster: EphemeralCluster) -> int:
    """30 records on partition 0, a second apart and ten minutes old, all read by the group."""
    first = int(time.time() * 1000) - 600_000
    producer = Producer(cluster.client(acks="all"))
    for i in range(RECORDS):
        producer.produce(TOPIC, value=f"r{i}".encode(), partition=0, timestamp=first + i * 1000)
    assert producer.flush(30) == 0
    committer = Consumer(as_group(cluster))
    committer.commit(offsets=[TopicPartition(TOPIC, 0, RECORDS)], asynchronous=False)
    committer.close()
    return first


def reset(cluster: EphemeralCluster, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kraftform", "groups", "reset", GROUP, str(EXAMPLE_SPECS),
                           "--command-config", str(cluster.properties()), *args],
                          capture_output=True, text=True, timeout=120, check=False, env=cluster_env(cluster))


def cluster_env(cluster: EphemeralCluster) -> dict[str, str]:
    return {**os.environ, **cluster.env()}


def as_group(cluster: EphemeralCluster) -> dict[str, Any]:
    """The admin's client settings as the group (a consumer that only assigns never joins it)."""
    return {**cluster.client(), "group.id": GROUP, "enable.auto.commit": False}


def read_as_group(cluster: EphemeralCluster) -> list[str]:
    """What the group reads next on partition 0 from its committed offset, without joining it."""
    consumer = Consumer(as_group(cluster))
    consumer.assign([TopicPartition(TOPIC, 0)])
    values: list[str] = []
    quiet_until = time.monotonic() + 10
    while time.monotonic() < quiet_until:
        message: Any = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value().decode())
            quiet_until = time.monotonic() + 2
    consumer.close()
    return values


def committed(cluster: EphemeralCluster) -> int:
    consumer = Consumer(as_group(cluster))
    [found] = consumer.committed([TopicPartition(TOPIC, 0)], timeout=10)
    consumer.close()
    return int(found.offset)


def test_a_reset_to_a_time_replays_exactly_the_records_after_it(cluster: EphemeralCluster, first_ms: int) -> None:
    when = datetime.fromtimestamp((first_ms + 20_000) / 1000, UTC).isoformat()  # the 21st record's time
    planned = reset(cluster, "--to", when)
    assert planned.returncode == 2, planned.stdout + planned.stderr
    assert f"~ [disruptive] update offsets {GROUP} {TOPIC}-0 offset: 30 -> 20" in planned.stdout, planned.stdout
    assert "replays 10 record(s) the group has read" in planned.stdout
    assert planned.stdout.startswith("Offsets reset: 1 change (1 disruptive)\n")  # the partitions it has offsets on
    assert committed(cluster) == RECORDS  # a plan moves nothing
    applied = reset(cluster, "--to", when, "--apply")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert committed(cluster) == 20
    assert read_as_group(cluster) == [f"r{i}" for i in range(20, RECORDS)]


def test_skipping_records_waits_for_allow_destructive(cluster: EphemeralCluster, first_ms: int) -> None:
    back = reset(cluster, "--to", f"{TOPIC}:0=5", "--apply")
    assert back.returncode == 0 and committed(cluster) == 5, back.stdout + back.stderr
    refused = reset(cluster, "--to", "latest", "--topic", TOPIC, "--apply")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "would skip records the group has not read: --allow-destructive; nothing was moved" in refused.stderr
    assert "skips 25 record(s) the group has not read" in refused.stdout
    assert committed(cluster) == 5
    done = reset(cluster, "--to", "latest", "--topic", TOPIC, "--apply", "--allow-destructive")
    assert done.returncode == 0 and committed(cluster) == RECORDS, done.stdout + done.stderr


def test_a_group_with_an_active_member_is_refused_and_an_undeclared_group_is_an_error(
        cluster: EphemeralCluster, first_ms: int) -> None:
    member = Consumer(as_group(cluster))
    member.subscribe([TOPIC])
    try:
        deadline = time.monotonic() + 60
        while not member.assignment() and time.monotonic() < deadline:
            member.poll(0.5)
        assert member.assignment(), "the member never joined"
        refused = reset(cluster, "--to", "earliest", "--apply", "--allow-destructive")
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert f"problem: group '{GROUP}' has 1 active member(s)" in refused.stdout, refused.stdout
        assert committed(cluster) == RECORDS
    finally:
        member.close()
    stranger = subprocess.run([sys.executable, "-m", "kraftform", "groups", "reset", "nobody", str(EXAMPLE_SPECS),
                               "--command-config", str(cluster.properties()), "--to", "earliest"],
                              capture_output=True, text=True, timeout=60, check=False)
    assert stranger.returncode == 1 and "group 'nobody' is not declared" in stranger.stderr, stranger.stderr
    assert "Traceback" not in stranger.stderr
