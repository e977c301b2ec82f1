"""The cluster `kraftform verify` measures, and the few Admin reads and writes its checks need.

A target is a cluster kraftform started (for this run, or earlier with `kraftform cluster up`), whose nodes
the checks may SIGKILL and restart, or a cluster given by a client config, whose nodes are not kraftform's
to kill. Every file a run writes (tool configs, tool output, plans) goes under its work directory, which the
secret scan then reads.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import IO

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kraftform.cluster.config import properties_text
from kraftform.cluster.connection import Connection
from kraftform.cluster.render import TOOL_JAVA_OPTIONS
from kraftform.errors import KafkaRequestFailed
from kraftform.runtime import Runtime
from kraftform.runtime.nodes.deployment import write_private
from kraftform.runtime.nodes.tools import kafka_tool_command
from kraftform.specset.model import Profile
from kraftform.waiting import NotYet, poll

#: Every topic a verify run makes starts with this; `kraftform.*` is never in a spec's managed scope, so
#: plans of the user's specs never see them.
TOPIC_PREFIX = "kraftform.verify."


@dataclass
class Target:
    connection: Connection
    workdir: Path
    description: str
    run_id: str
    #: Set when kraftform runs the nodes: the checks that kill one need it.
    runtime: Runtime | None = None
    #: Node id -> node name, for the runtime's kill and start.
    nodes: dict[int, str] = field(default_factory=dict)
    state_dir: Path | None = None
    brokers: int = 3

    @cached_property
    def admin_client(self) -> AdminClient:
        return AdminClient(self.connection.librdkafka())

    def admin(self) -> AdminClient:
        """One Admin client for the run (a client dropped while its request is pending cancels it)."""
        return self.admin_client

    def topic(self, suffix: str) -> str:
        return f"{TOPIC_PREFIX}{self.run_id}.{suffix}"

    def client_config(self, name: str, settings: Mapping[str, str], leave_out: Collection[str] = ()) -> Path:
        """A Java client config: `settings` without the keys in `leave_out` (those the tool sets itself), then
        the connection; owner-only, as it holds the password."""
        kept = {k: v for k, v in settings.items() if k not in leave_out}
        path = self.workdir / "configs" / f"{name}.properties"
        write_private(path, properties_text({**kept, **self.connection.java()},
                                            f"kraftform verify: {name}"))
        return path

    @cached_property
    def admin_properties(self) -> Path:
        """The connection alone, for the admin tools and commands of the run (written once)."""
        return self.client_config("admin", {})

    def replication_factor(self, profile: Profile) -> int:
        """The profile's replication (3 where it sets none), at most the brokers there are."""
        return min(profile.replication_factor or 3, self.brokers)

    def tool(self, main_class: str, args: Sequence[str], log_name: str,
             java_options: Sequence[str] = TOOL_JAVA_OPTIONS) -> tuple[subprocess.Popen[str], IO[str]]:
        """Start one of Kafka's tools; its stdout is piped to the caller, its stderr kept in the work dir."""
        err = open(self.workdir / "logs" / f"{log_name}.stderr", "w")  # noqa: SIM115 - closed by the caller
        process = subprocess.Popen(kafka_tool_command(main_class, ["--bootstrap-server", self.connection.bootstrap,
                                                                   *args], java_options=java_options),
                                   stdout=subprocess.PIPE, stderr=err, stdin=subprocess.DEVNULL, text=True)
        return process, err

    def run_tool(self, main_class: str, args: Sequence[str], log_name: str, timeout: float,
                 java_options: Sequence[str] = TOOL_JAVA_OPTIONS) -> tuple[int, str]:
        """Run one of Kafka's tools to its end (killed after `timeout` s); its exit status and stdout, which is
        also kept in the work dir."""
        process, err = self.tool(main_class, args, log_name, java_options)
        try:
            out, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            out, _ = process.communicate(timeout=30)
        finally:
            err.close()
        (self.workdir / "logs" / f"{log_name}.stdout").write_text(out)
        return process.returncode, out

    def create_topic(self, name: str, partitions: int, replication_factor: int, config: Mapping[str, str]) -> None:
        future = self.admin().create_topics([NewTopic(name, partitions, replication_factor,
                                                      config=dict(config))])[name]
        try:
            future.result(timeout=30)
        except Exception as exc:
            raise KafkaRequestFailed(f"creating topic {name}: {exc}") from exc

        def led() -> None:
            parts = self.admin().list_topics(name, timeout=10).topics[name].partitions
            if len(parts) != partitions or any(p.leader < 0 or len(p.isrs) < replication_factor
                                               for p in parts.values()):
                raise NotYet(f"{name}: partitions without a leader or a full ISR")

        poll(f"topic {name} to have its leaders", 60, led, retry_on=(KafkaRequestFailed,))

    def partition(self, topic: str, partition: int = 0) -> tuple[int, list[int], list[int]]:
        """Leader, replicas and in-sync replicas of one partition, as the brokers report them."""
        p = self.admin().list_topics(topic, timeout=10).topics[topic].partitions[partition]
        return p.leader, list(p.replicas), list(p.isrs)

    def wait_in_sync(self, topic: str, timeout: float = 120) -> float:
        """Seconds until every replica of every partition is back in sync."""
        start = time.monotonic()

        def synced() -> None:
            parts = self.admin().list_topics(topic, timeout=10).topics[topic].partitions
            lagging = [p.id for p in parts.values() if p.leader < 0 or len(p.isrs) < len(p.replicas)]
            if lagging:
                raise NotYet(f"partitions {lagging} not fully in sync")

        poll(f"{topic} back in sync", timeout, synced)
        return time.monotonic() - start

    def end_offsets(self, topic: str, partitions: int, timeout: float = 120.0) -> int:
        """Records in the topic (no compaction or transactions in a verify topic, so offsets count them). A
        partition whose leader is moving (a roll, a kill just before) is asked again: its NOT_LEADER answer is the
        moment, not the count (ci48's node-work check ended on one)."""
        consumer = Consumer({**self.connection.librdkafka(), "group.id": f"kraftform-verify-{self.run_id}"})

        def ends() -> int:
            try:
                return sum(consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                           for p in range(partitions))
            except KafkaException as exc:
                if exc.args and isinstance(exc.args[0], KafkaError) and exc.args[0].retriable():
                    raise NotYet(exc.args[0].str()) from None
                raise

        try:
            return poll(f"the end offsets of {topic}", timeout, ends, interval=1.0)
        finally:
            consumer.close()

    def delete_topics(self) -> None:
        """Remove every topic this run made."""
        names = [t for t in self.admin().list_topics(timeout=30).topics if t.startswith(self.topic(""))]
        if names:
            for future in self.admin().delete_topics(names, operation_timeout=60).values():
                future.result(timeout=90)

    def node_name(self, node_id: int) -> str:
        return self.nodes[node_id]
