"""Kafka's own command-line tools (kafka-configs, kafka-acls, kafka-metadata-quorum), run from the jars
kraftform fetched from Maven Central: for what no Python client offers, and as an independent witness
in tests (drift made by Kafka's tools, not by kraftform's own code)."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from kraftform.cluster.render import TOOL_JAVA_OPTIONS
from kraftform.errors import KafkaRequestFailed
from kraftform.runtime.artifacts import ensure_kafka
from kraftform.runtime.local import java_binary
from kraftform.versions import KAFKA_VERSION

CONFIGS = "kafka.admin.ConfigCommand"  # kafka-configs.sh
ACLS = "org.apache.kafka.tools.AclCommand"  # kafka-acls.sh
METADATA_QUORUM = "org.apache.kafka.tools.MetadataQuorumCommand"  # kafka-metadata-quorum.sh
TOPICS = "org.apache.kafka.tools.TopicCommand"  # kafka-topics.sh


def run_kafka_tool(main_class: str, args: Sequence[str], kafka_version: str = KAFKA_VERSION,
                   timeout: float = 120) -> str:
    """Run one tool to completion; its stdout, or an error carrying the end of its stderr."""
    home = ensure_kafka(kafka_version)
    command = [java_binary(), *TOOL_JAVA_OPTIONS, "-cp", str(home / "libs" / "*"), main_class, *args]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        tool = main_class.rsplit(".", 1)[-1]
        output = done.stderr[-1500:] or done.stdout[-1500:]
        raise KafkaRequestFailed(f"{tool} failed (exit {done.returncode}):\n{output}")
    return done.stdout
