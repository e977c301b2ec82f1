"""Kafka's own command-line tools (kafka-configs, kafka-acls, kafka-metadata-quorum), run from the jars
kraftform fetched from Maven Central: for what no Python client offers, and as an independent witness
in tests (drift made by Kafka's tools, not by kraftform's own code)."""

from __future__ import annotations

from collections.abc import Sequence

from kraftform.artifacts import ensure_kafka
from kraftform.cluster.render import TOOL_JAVA_OPTIONS
from kraftform.errors import KafkaRequestFailed
from kraftform.runtime.nodes.local import java_binary
from kraftform.subprocesses import run_to_end
from kraftform.versions import KAFKA_VERSION

#: The tools run from the pinned release's jars; 4.4 moved ConfigCommand from kafka.admin into kafka-tools.
CONFIGS = "org.apache.kafka.tools.ConfigCommand"  # kafka-configs.sh
ACLS = "org.apache.kafka.tools.AclCommand"  # kafka-acls.sh
METADATA_QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"  # kafka-metadata-quorum.sh
TOPICS = "org.apache.kafka.tools.TopicCommand"  # kafka-topics.sh
CLUSTER_TOOL = "org.apache.kafka.tools.ClusterTool"  # kafka-cluster.sh
VERIFIABLE_PRODUCER = "org.apache.kafka.tools.VerifiableProducer"  # kafka-verifiable-producer.sh
VERIFIABLE_CONSUMER = "org.apache.kafka.tools.VerifiableConsumer"  # kafka-verifiable-consumer.sh
PRODUCER_PERFORMANCE = "org.apache.kafka.tools.ProducerPerformance"  # kafka-producer-perf-test.sh
CONSUMER_PERFORMANCE = "org.apache.kafka.tools.ConsumerPerformance"  # kafka-consumer-perf-test.sh


#: For tools whose speed is measured: the JIT's full optimisation (the one-shot options stop at C1).
MEASURING_JAVA_OPTIONS = ("-Xmx512m",)


def kafka_tool_command(main_class: str, args: Sequence[str], kafka_version: str = KAFKA_VERSION,
                       java_options: Sequence[str] = TOOL_JAVA_OPTIONS) -> list[str]:
    """The command line that runs one of Kafka's tools from the fetched jars."""
    home = ensure_kafka(kafka_version)
    return [java_binary(), *java_options, "-cp", str(home / "libs" / "*"), main_class, *args]


def run_kafka_tool(main_class: str, args: Sequence[str], kafka_version: str = KAFKA_VERSION,
                   timeout: float = 120) -> str:
    """Run one tool to completion; its stdout, or an error carrying the end of its stderr."""
    command = kafka_tool_command(main_class, args, kafka_version)
    tool = main_class.rsplit(".", 1)[-1]
    done = run_to_end(command, tool, timeout, KafkaRequestFailed)
    if done.returncode != 0:
        output = done.stderr[-1500:] or done.stdout[-1500:]
        raise KafkaRequestFailed(f"{tool} failed (exit {done.returncode}):\n{output}")
    return done.stdout
