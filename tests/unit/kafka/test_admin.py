"""Admin waits against a port nobody listens on: librdkafka's own client, no cluster needed."""

from __future__ import annotations

import socket
import time

import pytest

from kraftform.cluster.connection import Connection
from kraftform.errors import ConnectionFailed
from kraftform.kafka.admin import Admin, batches


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("idle_before_wait", [0.0, 0.5])
def test_an_unreachable_cluster_fails_fast_even_when_the_client_saw_it_before_the_wait(
        idle_before_wait: float) -> None:
    # librdkafka reports "all brokers down" once; a client that saw it before its first request (an idle
    # moment after construction, a busy CI machine) once waited out the whole timeout instead.
    connection = Connection(f"127.0.0.1:{closed_port()}", "SASL_SSL", "SCRAM-SHA-512", "someone", "secret")
    admin = Admin(connection)
    time.sleep(idle_before_wait)
    started = time.monotonic()
    with pytest.raises(ConnectionFailed, match=r"no broker answers at 127\.0\.0\.1:"):
        admin.metadata(timeout=30.0)
    assert time.monotonic() - started < 5.0  # the cause, not the 30 s timeout


def test_batches_add_up_weights_and_an_overweight_item_goes_alone() -> None:
    assert list(batches([1, 2, 3, 4, 5], 2)) == [[1, 2], [3, 4], [5]]
    # CreateTopics: a topic's weight is its metadata records (1 + partitions + config overrides).
    assert list(batches([4, 4, 1, 9, 2], 9, weight=lambda w: w)) == [[4, 4, 1], [9], [2]]
    assert list(batches([12, 1], 9, weight=lambda w: w)) == [[12], [1]]
    assert list(batches([], 9)) == []
