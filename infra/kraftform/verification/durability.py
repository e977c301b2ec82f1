"""Delivery under failure, measured with Kafka's VerifiableProducer and VerifiableConsumer.

One run per profile: a one-partition topic with the profile's topic settings, a VerifiableProducer with
the profile's producer settings sending sequence numbers, the partition's leader SIGKILLed when a share of
them is acknowledged and restarted once another broker leads, then a VerifiableConsumer reading the whole
log after the old leader has caught up (and truncated whatever the new leader never had). Lost means
acknowledged and never read. The controller run kills the active controller instead and counts the
writes acknowledged while it is down.
"""

from __future__ import annotations

import signal
import threading
import time
from dataclasses import dataclass

from confluent_kafka import KafkaException

from kraftform.errors import KafkaRequestFailed, KraftformError
from kraftform.runtime import Runtime
from kraftform.runtime.nodes.status import QuorumStatus, parse_quorum
from kraftform.runtime.nodes.tools import METADATA_QUORUM, VERIFIABLE_CONSUMER, VERIFIABLE_PRODUCER, run_kafka_tool
from kraftform.specset.model import Profile
from kraftform.verification.delivery import Delivery, account
from kraftform.verification.target import Target
from kraftform.verification.toolout import ProducerLog, consumed_values, events
from kraftform.waiting import NotYet, poll

#: Settings of the verify run, not of the profile: the tools set these themselves.
#: The Java producer's default `retries` (Integer.MAX_VALUE), bounded in time by delivery.timeout.ms.
KAFKA_DEFAULT_RETRIES = "2147483647"
#: Metadata records a follower controller may trail by and count as caught up (heartbeats keep the log moving).
CAUGHT_UP = 50
TOOL_OWNED = ("acks", "key.serializer", "value.serializer", "group.id", "enable.auto.commit")


@dataclass(frozen=True)
class FailureRun:
    profile: str
    acks: str
    killed: str
    delivery: Delivery
    sent: int
    send_errors: int
    #: Seconds from the kill until another replica led the partition (or the quorum had a new leader).
    failover_s: float
    #: Writes acknowledged between the kill and the restart.
    acked_while_down: int
    seconds: float
    metadata_write_while_down: bool | None = None


class ProducerWatch:
    """A VerifiableProducer run, read line by line on a thread so the caller can act mid-stream."""

    def __init__(self, target: Target, topic: str, profile: Profile, records: int, rate: int, name: str) -> None:
        """`records` -1: until `stop`."""
        # VerifiableProducer sets retries=0 unless its config says otherwise; an application's producer has
        # Kafka's default, so the profile is measured with that unless it sets its own.
        config = target.client_config(f"{name}-producer", {"retries": KAFKA_DEFAULT_RETRIES, **profile.producer},
                                      leave_out=TOOL_OWNED)
        self.acks = acks_flag(profile.producer.get("acks", "all"))
        self.log = ProducerLog()
        self.process, self._err = target.tool(VERIFIABLE_PRODUCER, [
            "--topic", topic, "--max-messages", str(records), "--throughput", str(rate), "--acks", self.acks,
            "--command-config", str(config)], f"{name}-producer")
        self._out = open(target.workdir / "logs" / f"{name}-producer.stdout", "w")  # noqa: SIM115
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._out.write(line)
            for event in events([line]):
                self.log.add(event)

    def wait_acked(self, count: int, timeout: float) -> None:
        def enough() -> None:
            if self.process.poll() is not None and len(self.log.acked) < count:
                raise KafkaRequestFailed(f"VerifiableProducer exited ({self.process.returncode}) after "
                                         f"{len(self.log.acked)} acknowledgements")
            if len(self.log.acked) < count:
                raise NotYet(f"{len(self.log.acked)} of {count} acknowledged")

        poll("the producer's acknowledgements", timeout, enough, interval=0.05, error=KafkaRequestFailed)

    def stop(self) -> None:
        """SIGTERM: the tool's shutdown hook closes its producer (what is in flight is acknowledged or failed, and
        logged) and prints its summary; `finish` then reads it all."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def finish(self, timeout: float) -> ProducerLog:
        try:
            self.process.wait(timeout=timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(timeout=30)
            self._thread.join(timeout=30)
            self._out.close()
            self._err.close()
        return self.log


def acks_flag(acks: str) -> str:
    return "-1" if acks in ("all", "-1") else acks


def read_all(target: Target, topic: str, profile: Profile, expected: int, name: str, timeout: float = 300
             ) -> list[int]:
    """Every value in the topic, read by a VerifiableConsumer with the profile's consumer settings."""
    config = target.client_config(f"{name}-consumer", profile.consumer, leave_out=TOOL_OWNED)
    _code, out = target.run_tool(VERIFIABLE_CONSUMER, [
        "--topic", topic, "--group-id", f"kraftform-verify-{target.run_id}-{name}", "--max-messages",
        str(expected), "--verbose", "--reset-policy", "earliest", "--command-config", str(config)],
        f"{name}-consumer", timeout)
    return consumed_values(out.splitlines())


def _begin(target: Target, profile: Profile, kind: str, records: int, rate: int
           ) -> tuple[Runtime, str, int, ProducerWatch]:
    """A one-partition topic with the profile's settings and a producer started into it."""
    if target.runtime is None:
        raise KafkaRequestFailed(f"the {kind} check kills a node: it needs a cluster kraftform runs (--state-dir)")
    topic = target.topic(f"{kind}-{profile.name}")
    rf = target.replication_factor(profile)
    target.create_topic(topic, 1, rf, profile.topic)
    return target.runtime, topic, rf, ProducerWatch(target, topic, profile, records, rate, f"{kind}-{profile.name}")


def _end(runtime: Runtime, producer: ProducerWatch, killed: str) -> None:
    """Whatever happened: no producer left running, and the killed node started again (a no-op when it runs)."""
    if producer.process.poll() is None:
        producer.process.kill()
        producer.finish(timeout=30)
    if killed:
        runtime.start_node(killed)


def leader_failure(target: Target, profile: Profile, records: int, rate: int, kill_at: float = 0.4,
                   down_after_failover: float = 3.0) -> FailureRun:
    """Kill the partition leader when `kill_at` of the records are acknowledged; count what was lost."""
    start = time.monotonic()
    runtime, topic, _rf, producer = _begin(target, profile, "durability", records, rate)
    killed = ""
    try:
        producer.wait_acked(int(records * kill_at), timeout=300)
        leader, _, _ = target.partition(topic)
        killed = target.node_name(leader)
        kill_ms, kill_mono = int(time.time() * 1000), time.monotonic()
        runtime.kill_node(killed)

        def moved() -> float:
            now, _, _ = target.partition(topic)
            if now < 0 or now == leader:
                raise NotYet(f"leader {now}")
            return time.monotonic()

        failover_s = poll(f"{topic}: a new leader after killing {killed}", 120, moved,
                          retry_on=(KafkaException,), interval=0.2) - kill_mono
        time.sleep(down_after_failover)
        restart_ms = int(time.time() * 1000)
        runtime.start_node(killed)
        log = producer.finish(timeout=600)
    finally:
        _end(runtime, producer, killed)
    target.wait_in_sync(topic, timeout=180)
    total = target.end_offsets(topic, 1)
    read = read_all(target, topic, profile, total, f"durability-{profile.name}")
    return FailureRun(profile.name, producer.acks, killed, account(log.acked.keys(), read), log.sent or 0,
                      log.errors, failover_s, log.acked_between(kill_ms, restart_ms), time.monotonic() - start)


def quorum(target: Target) -> QuorumStatus:
    return parse_quorum(run_kafka_tool(METADATA_QUORUM, ["--bootstrap-server", target.connection.bootstrap,
                                                         "--command-config", str(target.admin_properties),
                                                         "describe", "--status"]))


def controller_failure(target: Target, profile: Profile, records: int, rate: int, down_s: float = 10.0
                       ) -> FailureRun:
    """Kill the active controller mid-run: writes must go on, a topic can still be created, nothing lost.

    The producer runs until it is stopped, after the restart and once `records` are acknowledged: the kill waits
    for a third of them as this process reads the producer's output, which a loaded machine can read seconds
    late, and a producer that stopped by itself could then have finished before the kill (0 writes "while down"
    in a CI run, measured on a producer that had ended 1 s before it)."""
    start = time.monotonic()
    runtime, topic, rf, producer = _begin(target, profile, "controller", -1, rate)
    created = False
    killed = ""
    try:
        producer.wait_acked(records // 3, timeout=300)
        leader = quorum(target).leader_id
        killed = target.node_name(leader)
        kill_ms, kill_mono = int(time.time() * 1000), time.monotonic()
        runtime.kill_node(killed)

        def elected() -> float:
            now = quorum(target).leader_id
            if now == leader:
                raise NotYet(f"quorum leader still {now}")
            return time.monotonic()

        failover_s = poll("a new active controller", 120, elected, retry_on=(KraftformError,),
                          interval=0.5) - kill_mono
        try:
            target.create_topic(target.topic(f"controller-{profile.name}-created-while-down"), 1, rf, {})
            created = True
        except KafkaRequestFailed:
            created = False
        time.sleep(max(0.0, down_s - (time.time() - kill_ms / 1000)))
        restart_ms = int(time.time() * 1000)
        runtime.start_node(killed)
        producer.wait_acked(records, timeout=300)
        producer.stop()
        log = producer.finish(timeout=600)
    finally:
        _end(runtime, producer, killed)

    def caught_up() -> None:
        status = quorum(target)
        if status.max_follower_lag > CAUGHT_UP:
            raise NotYet(f"controller quorum lag {status.max_follower_lag}")

    poll("the restarted controller to catch up", 120, caught_up, retry_on=(KraftformError,), interval=1)
    total = target.end_offsets(topic, 1)
    read = read_all(target, topic, profile, total, f"controller-{profile.name}")
    return FailureRun(profile.name, producer.acks, killed, account(log.acked.keys(), read), log.sent or 0,
                      log.errors, failover_s, log.acked_between(kill_ms, restart_ms), time.monotonic() - start,
                      metadata_write_while_down=created)
