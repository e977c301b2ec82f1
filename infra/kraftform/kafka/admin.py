"""Admin clients that fail with a message a user can act on, and count the requests they send.

A wrong password, a TLS listener spoken to in plaintext, or a port nobody listens on makes librdkafka retry
quietly until a timeout, although it reports the cause through `error_cb` within milliseconds. Waits here
go in short rounds that serve those callbacks, and a cause that waiting cannot fix ends the wait at once.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import functools
import re
import socket
import ssl
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ParamSpec, TypeVar

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, ClusterMetadata

from kraftform.cluster.connection import Connection
from kraftform.errors import (
    AuthenticationFailed,
    AuthorizationDenied,
    ConnectionFailed,
    KafkaRequestFailed,
    KraftformError,
)

TIMEOUT = 30.0
#: How often a wait looks at what librdkafka reported.
ROUND_S = 0.2
#: How long a request may stay unanswered once a broker it may be waiting on has gone (refused a connection, or
#: dropped one): a broker back by then answers within it; one stopped keeps the request queued until its timeout.
GONE_GRACE_S = 2.0
#: `wait(on=ANY_BROKER)`: a request librdkafka gave to a broker of its choosing.
ANY_BROKER = -1
#: How long before a request was sent the broker it went to may have gone: librdkafka reports the same failure
#: of a broker once in 30 s.
GONE_WINDOW_S = 30.0
#: What librdkafka's error callback says when a known broker (`name/<id>`) cannot be reached or hung up.
_GONE = re.compile(r"/(\d+): (Connect to \S+ failed|Disconnected)")
T = TypeVar("T")


class Requests(Counter[str]):
    """Admin requests sent, by API: the figure the benchmark compares with one-request-per-topic tools."""

    def total(self) -> int:
        return sum(self.values())

    def __str__(self) -> str:
        return ", ".join(f"{api} {n}" for api, n in sorted(self.items())) or "none"


def batches(items: list[Any], size: int, weight: Callable[[Any], int] = lambda _item: 1) -> Iterable[list[Any]]:
    """`items` in runs whose `weight` adds up to at most `size` (an item heavier than that goes alone): reads
    and writes go to Kafka in batches, never one request per item."""
    batch: list[Any] = []
    total = 0
    for item in items:
        w = weight(item)
        if batch and total + w > size:
            yield batch
            batch, total = [], 0
        batch.append(item)
        total += w
    if batch:
        yield batch


def is_auth_error(error: KafkaError) -> bool:
    return error.code() in (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED)


def decisive_cause(errors: Iterable[KafkaError], connection: Connection) -> str | None:
    """What librdkafka reported that no amount of waiting fixes, in a user's words; None if nothing yet."""
    seen = list(errors)
    user = connection.username or "anonymous"
    for error in seen:
        if is_auth_error(error):
            return (f"authentication failed for user {user!r} ({error.str()}): check the password in the client "
                    f"config")
    for error in seen:
        if "SSL listener" in error.str():
            return (f"the listener speaks TLS and the client config asks for {connection.protocol}: set "
                    f"security.protocol=SASL_SSL ({error.str()})")
    for error in seen:
        if error.code() == KafkaError._SSL:
            return (f"the TLS handshake failed ({error.str()}): is ssl.truststore.location (ssl.ca.location) the "
                    f"cluster's CA certificate?")
    if any(e.code() == KafkaError._ALL_BROKERS_DOWN for e in seen):
        if connection.protocol in ("PLAINTEXT", "SASL_PLAINTEXT") and speaks_tls(connection.bootstrap):
            return (f"the listener speaks TLS and the client config asks for {connection.protocol}: set "
                    f"security.protocol=SASL_SSL")
        transport = [e.str() for e in seen if e.code() == KafkaError._TRANSPORT]
        return f"no broker answers at {connection.bootstrap} ({transport[-1] if transport else 'all brokers down'})"
    return None


def speaks_tls(bootstrap: str, timeout: float = 2.0) -> bool:
    """Whether the first bootstrap server completes a TLS handshake: librdkafka reports a plaintext client on a
    TLS listener only in its log ("connecting to a SSL listener?"), as the brokers being down."""
    host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # only the protocol is asked about, not who the server is
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout) as raw, \
                context.wrap_socket(raw, server_hostname=host.strip("[]")):
            return True
    except (OSError, ValueError):
        return False


def _reported(errors: list[KafkaError], gone: dict[int, float], error: KafkaError) -> None:
    errors.append(error)
    if error.code() == KafkaError._TRANSPORT and (broker := _GONE.search(error.str())):
        gone[int(broker.group(1))] = time.monotonic()


class Admin:
    """A confluent-kafka AdminClient plus the request counter; create one per operation (it does not pickle)."""

    def __init__(self, connection: Connection, requests: Requests | None = None) -> None:
        self.connection = connection
        self.requests = requests if requests is not None else Requests()
        self.errors: list[KafkaError] = []
        #: Broker id -> when it last refused a connection or dropped one (librdkafka's monotonic view, ours).
        self.gone: dict[int, float] = {}
        self._answered = False
        # The callback holds what it fills, never this object: a cycle through the client would let Python's
        # collector destroy the client from a librdkafka thread, which librdkafka aborts the process for.
        conf: dict[str, Any] = {**connection.librdkafka(),
                                "error_cb": functools.partial(_reported, self.errors, self.gone)}
        self.client = AdminClient(conf)

    def metadata(self, timeout: float = TIMEOUT, topic: str | None = None) -> ClusterMetadata:
        """Every topic's metadata, or only `topic`'s (one request, whatever the cluster holds)."""
        self.requests["Metadata"] += 1
        return self._waiting("read metadata", timeout, lambda: self.client.list_topics(topic, timeout=ROUND_S))

    def wait(self, future: concurrent.futures.Future[T], what: str, timeout: float = TIMEOUT,
             on: int | None = None) -> T:
        """A request's result, failing as soon as the cause is known rather than when `timeout` runs out."""
        self.settle(future, what, timeout, on)
        try:
            return future.result()
        except KafkaException as exc:
            raise self.failure(what, exc) from None  # a failed answer is final: the future holds it for good

    def settle(self, future: concurrent.futures.Future[Any], what: str, timeout: float = TIMEOUT,
               on: int | None = None) -> None:
        """Until `future` has its answer, which the caller reads (and judges, when some errors are expected).
        `on`: the broker the request went to, or ANY_BROKER. Once that broker (any broker, lately) has gone, a
        request still unanswered after GONE_GRACE_S waits on a broker that is stopping or stopped, which
        librdkafka keeps it queued for until its timeout (a killed broker stays in the cluster's metadata until
        its session ends): it fails then, and a caller that reads again with a new client's metadata does not ask
        that broker."""
        sent = time.monotonic()

        def attempt() -> None:
            if future.done():
                return
            if on is not None and time.monotonic() - sent > GONE_GRACE_S:
                left = [b for b, at in list(self.gone.items())
                        if b == on or (on == ANY_BROKER and at >= sent - GONE_WINDOW_S)]
                if left:
                    raise ConnectionFailed(f"cannot {what} on {self.connection.bootstrap}: broker {left[0]} "
                                           f"stopped answering (it is stopping, or stopped)")
            concurrent.futures.wait([future], timeout=ROUND_S)
            if not future.done():
                raise concurrent.futures.TimeoutError

        self._waiting(what, timeout, attempt)

    def ask(self, send: Callable[[], concurrent.futures.Future[T]], what: str, timeout: float = TIMEOUT) -> T:
        """The result of a request any broker can answer, sent again when it failed on the way or a broker it
        may be waiting on has gone. librdkafka sends it to the broker its metadata names as the controller (in
        KRaft, one broker picked by whichever answered): one that just went down fails it with a transport error
        or keeps it queued until its timeout, and keeps being named until the metadata is read again (CI: a
        broker killed, then `describe the cluster` waited 30 s on it). So the metadata is read before each
        re-send; the killed broker drops out of it once its session ends."""
        future, sent = send(), time.monotonic()

        def attempt() -> T:
            nonlocal future, sent
            try:
                if (not future.done() and time.monotonic() - sent > GONE_GRACE_S
                        and any(at >= sent - GONE_WINDOW_S for at in list(self.gone.values()))):
                    future, sent = resend(), time.monotonic()
                return future.result(timeout=ROUND_S)
            except KafkaException as exc:
                if exc.args[0].code() == KafkaError._TRANSPORT:
                    time.sleep(ROUND_S)
                    future, sent = resend(), time.monotonic()
                raise

        def resend() -> concurrent.futures.Future[T]:
            with contextlib.suppress(KafkaException):  # none answered: the request waits for one, as it did
                self.client.list_topics(timeout=GONE_GRACE_S)  # a controller named anew, by a broker that answers
            return send()

        return self._waiting(what, timeout, attempt)

    def _waiting(self, what: str, timeout: float, attempt: Callable[[], T]) -> T:
        # A client that has had an answer must not fail a later request on what came before it (a broker
        # restarting then, a transport error since healed); refused credentials stay refused, so those are kept.
        # Until its first answer everything it saw is kept: librdkafka reports "all brokers down" once, and
        # often before the first wait starts.
        self.client.poll(0)
        if self._answered:
            self.errors[:] = [e for e in self.errors if is_auth_error(e)]
        deadline = time.monotonic() + timeout
        while True:
            try:
                result = attempt()
                self._answered = True
                return result
            except KafkaException as exc:
                # A round that timed out, or a broker not reached yet, is the wait going on, not its end.
                retryable = exc.args[0].code() in (KafkaError._TRANSPORT, KafkaError._TIMED_OUT)
                if not retryable or time.monotonic() > deadline:
                    raise self.failure(what, exc) from None
            except concurrent.futures.TimeoutError:
                if time.monotonic() > deadline:
                    raise self.failure(what, TimeoutError(f"no answer within {timeout:.0f} s")) from None
            self.client.poll(0)
            cause = decisive_cause(self.errors, self.connection)
            if cause is not None:
                raise self._kind(None)(f"cannot {what} on {self.connection.bootstrap}: {cause}")

    def failure(self, what: str, exc: BaseException) -> KraftformError:
        """The most telling error: a decisive cause (an authentication failure, ...) beats the timeout it caused."""
        self.client.poll(0)
        error = exc.args[0] if isinstance(exc, KafkaException) else None
        cause = decisive_cause(self.errors, self.connection) or (
            self.errors[-1].str() if self.errors else (error.str() if error is not None else str(exc)))
        return self._kind(error)(f"cannot {what} on {self.connection.bootstrap} as "
                                 f"{self.connection.username or 'anonymous'}: {cause}")

    def _kind(self, error: KafkaError | None) -> type[KraftformError]:
        return classify(error, self.errors)


def classify(error: KafkaError | None, seen: Iterable[KafkaError] = ()) -> type[KraftformError]:
    """Which of the user-actionable errors a failed Admin request is, decided here for every caller: refused
    credentials (among what librdkafka reported, `seen`), an ACL, reaching the cluster, or the request itself."""
    if any(is_auth_error(e) for e in seen) or (error is not None and is_auth_error(error)):
        return AuthenticationFailed
    if error is not None and "AUTHORIZATION_FAILED" in (error.name() or ""):
        return AuthorizationDenied
    if error is None or error.code() in (KafkaError._TRANSPORT, KafkaError._TIMED_OUT,
                                         KafkaError._ALL_BROKERS_DOWN, KafkaError._SSL):
        return ConnectionFailed
    return KafkaRequestFailed


P = ParamSpec("P")


def translated(what: str) -> Callable[[Callable[P, T]], Callable[P, T]]:
    """The decorated call's client errors (confluent-kafka's, kafka-python's, a timed-out future, a socket's) as
    kraftform's, classified as `classify` does: the one hierarchy holds above kafka/, and a caller that retries
    names what it retries on in kraftform's words."""

    def decorate(call: Callable[P, T]) -> Callable[P, T]:
        @functools.wraps(call)
        def run(*args: P.args, **kwargs: P.kwargs) -> T:
            from kraftform.kafka.kafka_python import KafkaError as PyKafkaError

            try:
                return call(*args, **kwargs)
            except KafkaException as exc:
                error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
                raise classify(error)(f"cannot {what}: {error.str() if error is not None else exc}") from None
            except PyKafkaError as exc:
                raise _py_kind(exc)(f"cannot {what}: {type(exc).__name__}: {exc}") from None
            except (concurrent.futures.TimeoutError, TimeoutError, OSError) as exc:
                raise ConnectionFailed(f"cannot {what}: {exc or type(exc).__name__}") from None

        return run

    return decorate


def _py_kind(exc: Exception) -> type[KraftformError]:
    """kafka-python's error classes by what a user does about them (its names are Kafka's error names)."""
    name = type(exc).__name__
    if "AuthenticationFailed" in name:
        return AuthenticationFailed
    if "AuthorizationFailed" in name:
        return AuthorizationDenied
    if name in ("NoBrokersAvailable", "KafkaConnectionError", "KafkaTimeoutError", "RequestTimedOutError",
                "NodeNotReadyError"):
        return ConnectionFailed
    return KafkaRequestFailed


@contextlib.contextmanager
def kafka_python_admin(connection: Connection, requests: Requests) -> Iterator[Any]:
    """kafka-python's admin client, for the APIs confluent-kafka lacks; closed on exit. Its errors escaping the
    block are kraftform's (classified as `translated` does), never a traceback."""
    from kraftform.kafka.kafka_python import KafkaAdminClient
    from kraftform.kafka.kafka_python import KafkaError as PyKafkaError

    requests["ApiVersions+Metadata (kafka-python bootstrap)"] += 2
    try:
        client = KafkaAdminClient(**connection.kafka_python(), request_timeout_ms=int(TIMEOUT * 1000))
    except PyKafkaError as exc:
        raise ConnectionFailed(f"cannot connect to {connection.bootstrap} (kafka-python): {exc}") from None
    try:
        yield client
    except PyKafkaError as exc:
        raise _py_kind(exc)(f"a request to {connection.bootstrap} (kafka-python) failed: {type(exc).__name__}: "
                            f"{exc}") from None
    finally:
        client.close()
