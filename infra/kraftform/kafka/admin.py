"""Admin clients that fail with a message a user can act on, and count the requests they send.

A wrong password or an unreachable bootstrap server makes librdkafka retry quietly until a timeout; the
first metadata read here surfaces the real cause (reported through `error_cb`) instead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ClusterMetadata

from kraftform.errors import KraftformError
from kraftform.kafka.connect import Connection

TIMEOUT = 30.0


class Requests(Counter[str]):
    """Admin requests sent, by API: the figure the benchmark compares with one-request-per-topic tools."""

    def total(self) -> int:
        return sum(self.values())

    def __str__(self) -> str:
        return ", ".join(f"{api} {n}" for api, n in sorted(self.items())) or "none"


def batches(items: list[Any], size: int) -> Iterable[list[Any]]:
    """`items` in runs of `size`: reads and writes go to Kafka in batches, never one request per item."""
    for start in range(0, len(items), size):
        yield items[start:start + size]


def is_auth_error(error: KafkaError) -> bool:
    return error.code() in (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED)


class Admin:
    """A confluent-kafka AdminClient plus the request counter; create one per operation (it does not pickle)."""

    def __init__(self, connection: Connection, requests: Requests | None = None) -> None:
        self.connection = connection
        self.requests = requests if requests is not None else Requests()
        self.errors: list[KafkaError] = []
        conf: dict[str, Any] = {**connection.librdkafka(), "error_cb": self.errors.append}
        self.client = AdminClient(conf)

    def metadata(self, timeout: float = TIMEOUT) -> ClusterMetadata:
        self.requests["Metadata"] += 1
        try:
            return self.client.list_topics(timeout=timeout)
        except KafkaException as exc:
            raise self.failure("read metadata", exc) from None

    def failure(self, what: str, exc: BaseException) -> KraftformError:
        """The most telling error: an authentication failure beats the timeout it caused."""
        self.client.poll(0)
        auth = [e for e in self.errors if is_auth_error(e)]
        cause = auth[0].str() if auth else (self.errors[-1].str() if self.errors else str(exc))
        return KraftformError(f"cannot {what} on {self.connection.bootstrap} as "
                              f"{self.connection.username or 'anonymous'}: {cause}")


@contextmanager
def kafka_python_admin(connection: Connection, requests: Requests) -> Iterator[Any]:
    """kafka-python's admin client, for the two APIs confluent-kafka lacks; closed on exit."""
    from kafka.admin import KafkaAdminClient
    from kafka.errors import KafkaError as PyKafkaError

    requests["ApiVersions+Metadata (kafka-python bootstrap)"] += 2
    try:
        client = KafkaAdminClient(**connection.kafka_python(), request_timeout_ms=int(TIMEOUT * 1000))
    except PyKafkaError as exc:
        raise KraftformError(f"cannot connect to {connection.bootstrap} (kafka-python): {exc}") from None
    try:
        yield client
    finally:
        client.close()
