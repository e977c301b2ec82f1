"""Producer and consumer I/O for the streaming consumers: can this user read these topics (asked before a
Spark job starts, so a missing ACL or a wrong password is named in a second instead of surfacing as a JVM
stack trace), how far the topics go (lag), and records produced at a steady rate (`consumers feed`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import OffsetSpec

from kraftform.cluster.connection import Connection
from kraftform.errors import (
    AuthenticationFailed,
    AuthorizationDenied,
    ConnectionFailed,
    KafkaRequestFailed,
    UsageError,
)
from kraftform.kafka.admin import Admin, decisive_cause, is_auth_error

PREFLIGHT_S = 10.0
ROUND_S = 0.2
QUIET_S = 1.5


def check_read_access(connection: Connection, topics: Iterable[str], group: str) -> None:
    """Fetch from the end of partition 0 of each topic as `connection`'s user: Kafka answers a Fetch without
    Read permission with TOPIC_AUTHORIZATION_FAILED, and a bad login with an authentication error, both within
    a few hundred milliseconds of connecting. A quiet QUIET_S after the connection is up means the fetch was
    allowed (should it not be, the Spark job's own error is translated the same way)."""
    errors: list[KafkaError] = []
    topics = list(topics)
    consumer = Consumer({**connection.librdkafka(), "group.id": group, "enable.auto.commit": False,
                         "error_cb": errors.append, "fetch.wait.max.ms": 50})
    user = connection.username or "anonymous"
    try:
        deadline = time.monotonic() + PREFLIGHT_S
        metadata = None
        last = "no answer"
        while metadata is None:
            # Short rounds: librdkafka reports a refused login through error_cb, which only poll() serves.
            try:
                metadata = consumer.list_topics(timeout=0.5)
            except KafkaException as exc:
                last = exc.args[0].str()
            consumer.poll(0)
            _raise_access_error(errors, user, connection, topics, group)
            if metadata is None and time.monotonic() > deadline:
                raise ConnectionFailed(f"cannot reach {connection.bootstrap} as {user!r} within {PREFLIGHT_S:.0f} s "
                                       f"({last})")
        for topic in topics:
            # Asked by name: a listing of all topics silently leaves out those the user may not describe.
            found = consumer.list_topics(topic, timeout=PREFLIGHT_S).topics.get(topic)
            code = None if found is None or found.error is None else found.error.code()
            if code == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                raise AuthorizationDenied(f"user {user!r} is not allowed to describe or read topic {topic!r} "
                                          f"(add an ACL allowing read, then `kraftform apply`)")
            if found is None or code is not None:
                raise UsageError(f"topic {topic!r} does not exist on {connection.bootstrap}: apply the specs "
                                 f"before starting consumers (a Kafka source fails at once on a missing topic)")
        consumer.assign([TopicPartition(t, 0, -1) for t in topics])  # -1: the end; nothing is read
        quiet_until = min(deadline, time.monotonic() + QUIET_S)
        while time.monotonic() < quiet_until:
            message = consumer.poll(0.1)
            failed = message.error() if message is not None else None
            if failed is not None:
                errors.append(failed)
            _raise_access_error(errors, user, connection, topics, group)
    finally:
        consumer.close()


def _raise_access_error(errors: list[KafkaError], user: str, connection: Connection, topics: list[str],
                        group: str) -> None:
    for error in errors:
        if is_auth_error(error):
            raise AuthenticationFailed(f"user {user!r} cannot log in to {connection.bootstrap}: {error.str()} "
                                       f"(check the password its spec names)")
    cause = decisive_cause(errors, connection)
    if cause is not None:
        raise ConnectionFailed(f"cannot reach {connection.bootstrap} as {user!r}: {cause}")
    for error in errors:
        if error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
            raise AuthorizationDenied(f"user {user!r} is not allowed to read topic(s) {', '.join(topics)}: "
                                      f"{error.str()} (add an ACL allowing read, then `kraftform apply`)")
        if error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
            raise AuthorizationDenied(f"user {user!r} is not allowed to use consumer group {group}: {error.str()}")
    errors.clear()


def end_offsets(connection: Connection, topics: Iterable[str], timeout: float = 30.0) -> dict[tuple[str, int], int]:
    """The next offset to be written in every partition of `topics`: one Metadata and one ListOffsets request."""
    admin = Admin(connection)
    metadata = admin.metadata(timeout=timeout)
    wanted = [TopicPartition(t, p) for t in topics if t in metadata.topics
              for p in metadata.topics[t].partitions]
    if not wanted:
        return {}
    latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
    futures = admin.client.list_offsets(dict.fromkeys(wanted, latest), request_timeout=timeout)
    return {(tp.topic, tp.partition): admin.wait(future, "list offsets", timeout).offset
            for tp, future in futures.items()}


def produce_paced(connection: Connection, records: Iterable[tuple[str, str | None, str | bytes]], rate: float,
                  count: int | None, settings: dict[str, Any] | None = None,
                  progress: Callable[[int, float], None] | None = None) -> int:
    """Produce (topic, key, value) records at about `rate` per second, `count` of them (None: until
    interrupted); acknowledged by the brokers before it returns. Returns how many were sent."""
    failures: list[KafkaError] = []
    reported: list[KafkaError] = []
    producer = Producer({**connection.librdkafka(), **(settings or {}), "error_cb": reported.append})

    def delivered(error: KafkaError | None, _message: Any) -> None:
        if error is not None:
            failures.append(error)

    def check() -> None:
        cause = decisive_cause(reported, connection)
        if failures or cause:
            producer.purge()  # what is still queued would only wait out its delivery timeout
            raise KafkaRequestFailed(f"producing to {connection.bootstrap} failed: "
                                     f"{cause or failures[0].str()}")

    started = time.monotonic()
    sent = 0
    try:
        for topic, key, value in records:
            if count is not None and sent >= count:
                break
            while True:
                try:
                    producer.produce(topic, value=value.encode() if isinstance(value, str) else value,
                                     key=None if key is None else key.encode(),
                                     on_delivery=delivered)
                    break
                except BufferError:
                    producer.poll(0.05)
            sent += 1
            check()
            ahead = sent / rate - (time.monotonic() - started)
            if ahead > 0:
                producer.poll(ahead)
            else:
                producer.poll(0)
            if progress is not None and sent % max(1, int(rate)) == 0:
                progress(sent, time.monotonic() - started)
    except BaseException:
        producer.purge()
        producer.flush(0)
        raise
    deadline = time.monotonic() + 30
    while producer.flush(ROUND_S) and time.monotonic() < deadline:
        check()
    check()
    if len(producer):
        raise KafkaRequestFailed(f"{len(producer)} record(s) not acknowledged within 30 s")
    return sent
