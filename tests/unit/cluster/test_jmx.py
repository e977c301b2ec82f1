"""The JMX exporter's rules every node starts with."""

from __future__ import annotations

import yaml

from kraftform.cluster.jmx import FAMILIES, METRICS_FILE, agent_option, exporter_config


def test_the_config_is_yaml_with_only_the_beans_the_rules_read_and_every_family_named() -> None:
    config = yaml.safe_load(exporter_config())
    assert config["lowercaseOutputName"] is True
    assert config["includeObjectNames"] and all(":" in name for name in config["includeObjectNames"])
    produced = {rule["name"] for rule in config["rules"]}
    assert produced == set(FAMILIES)
    per_topic = next(r for r in config["rules"] if r["name"] == "kafka_server_messages_in_total" and "labels" in r)
    assert per_topic["labels"] == {"topic": "$1"} and per_topic["pattern"].endswith("topic=(.+)><>Count")


def test_the_agent_listens_on_the_address_given_only() -> None:
    option = agent_option("/opt/agent.jar", "127.30.0.1", "/etc/kraftform")
    assert option == f"-javaagent:/opt/agent.jar=127.30.0.1:9404:/etc/kraftform/{METRICS_FILE}"
