"""Admin waits against a port nobody listens on: librdkafka's own client, no cluster needed."""

from __future__ import annotations

import gc
import socket
import time
import weakref

import pytest
from confluent_kafka import KafkaError

from kraftform.cluster.connection import Connection
from kraftform.errors import ConnectionFailed
from kraftform.kafka.admin import Admin, _reported, batches


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


def test_a_broker_that_refused_or_dropped_a_connection_is_noted_by_id_and_bootstrap_names_are_not() -> None:
    errors: list[KafkaError] = []
    gone: dict[int, float] = {}
    for text in ("sasl_ssl://127.75.0.1:9092/1: Connect to ipv4#127.75.0.1:9092 failed: Connection refused "
                 "(after 0ms in state CONNECT, 1 identical error(s) suppressed)",
                 "sasl_ssl://127.75.0.3:9092/3: Disconnected (after 5012ms in state UP)",
                 "sasl_ssl://127.75.0.2:9092/bootstrap: Connect to ipv4#127.75.0.2:9092 failed: Connection refused"):
        _reported(errors, gone, KafkaError(KafkaError._TRANSPORT, text))
    _reported(errors, gone, KafkaError(KafkaError._AUTHENTICATION, "sasl_ssl://127.75.0.2:9092/2: SASL failed"))
    assert sorted(gone) == [1, 3] and len(errors) == 4


def test_an_admin_is_freed_by_reference_counting_alone() -> None:
    """Its error callback must not lead back to it: a client in a reference cycle is freed by the collector,
    which may run in a librdkafka thread, and librdkafka aborts the process when a client is destroyed there."""
    admin = Admin(Connection(f"127.0.0.1:{closed_port()}", "PLAINTEXT", None, None, None))
    freed = weakref.ref(admin.client)
    gc.disable()
    try:
        del admin
        assert freed() is None
    finally:
        gc.enable()
