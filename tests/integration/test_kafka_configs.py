"""kraftform's table of Kafka's server settings (what `validate` checks `broker_config` against, and what says
whether a setting is applied live or needs a restart) is what the pinned Kafka's own jars document."""

from __future__ import annotations

import subprocess

import pytest

from kraftform.artifacts import ensure_kafka
from kraftform.definitions.server_configs import parse_config_docs
from kraftform.definitions.server_table import KAFKA_CONFIGS, KAFKA_VERSION
from kraftform.versions import KAFKA_VERSION as PINNED

pytestmark = pytest.mark.integration


def test_the_settings_table_is_the_pinned_kafkas_own() -> None:
    home = ensure_kafka(PINNED)
    docs = subprocess.run(["java", "-cp", str(home / "libs" / "*"), "kafka.server.KafkaConfig"], capture_output=True,
                          text=True, check=True, timeout=120).stdout
    live = parse_config_docs(docs)
    assert KAFKA_VERSION == PINNED
    assert live == KAFKA_CONFIGS, "definitions/server_table.py is out of date: run scripts/generate-kafka-configs"
    assert live["num.io.threads"][3] == "cluster-wide" and live["node.id"][3] == "read-only"


def test_the_group_settings_table_is_the_pinned_kafkas_own() -> None:
    from kraftform.definitions.group_configs import parse_group_config_docs
    from kraftform.definitions.group_table import GROUP_CONFIGS
    from kraftform.definitions.group_table import KAFKA_VERSION as GROUPS_VERSION

    home = ensure_kafka(PINNED)
    docs = subprocess.run(["java", "-cp", str(home / "libs" / "*"), "org.apache.kafka.coordinator.group.GroupConfig"],
                          capture_output=True, text=True, check=True, timeout=120).stdout
    assert GROUPS_VERSION == PINNED
    assert parse_group_config_docs(docs) == GROUP_CONFIGS, \
        "definitions/group_table.py is out of date: run scripts/generate-kafka-configs"
    assert GROUP_CONFIGS["consumer.session.timeout.ms"][0] == "int"


def test_every_tool_kraftform_runs_is_a_class_of_the_pinned_jars() -> None:
    """A release can move a tool (4.4 moved ConfigCommand from kafka.admin into kafka-tools): a class missing from
    the jars is found here, not by a user's `plan` failing with ClassNotFoundException."""
    import zipfile

    from kraftform.cluster import render
    from kraftform.runtime.nodes import tools

    home = ensure_kafka(PINNED)
    classes = {name for jar in (home / "libs").glob("*.jar") for name in zipfile.ZipFile(jar).namelist()}
    mains = [v for k, v in vars(tools).items()
             if k.isupper() and isinstance(v, str) and v.startswith(("org.apache.kafka.", "kafka."))]
    mains += [render.STORAGE_TOOL, render.KAFKA_MAIN]
    assert len(mains) >= 10
    assert [m for m in mains if m.replace(".", "/") + ".class" not in classes] == []
