"""A Kafka upgrade as a user does it: a cluster of 4.3.1 (the release pinned before), `kafka_version: 4.4.0` (the
pinned one) in the specs rolled onto the new jars node by node while a VerifiableProducer with acks=all writes
(nothing acknowledged lost), then `metadata_version: "4.4"` finalised only when asked, as the destructive change it
is, and a lower release refused."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import NewTopic

from kraftform.definitions.features import RELEASE_FEATURES
from kraftform.kafka.admin import Requests, kafka_python_admin
from kraftform.runtime.deployment import admin_config, load
from kraftform.versions import KAFKA_VERSION

from .conftest import Day2, own_cluster
from .test_day2 import Producer, read_values

OLD = "4.3.1"
NEW = KAFKA_VERSION


@pytest.fixture(scope="module")
def old_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Day2]:
    with own_cluster(tmp_path_factory.mktemp("upgrade"), "local", name="kfupgrade", kafka_version=OLD) as cluster:
        yield cluster


def _metadata_version(state: Path) -> int:
    with kafka_python_admin(admin_config(state), Requests()) as client:
        return int(client.describe_features()["metadata.version"]["finalized"][1])


def test_an_upgrade_rolls_every_node_onto_the_new_jars_and_finalises_only_when_asked(old_cluster: Day2) -> None:
    cluster = old_cluster
    assert _metadata_version(cluster.state) == RELEASE_FEATURES["4.3"]["metadata.version"]
    topic = f"upgrade.{uuid.uuid4().hex[:6]}"
    admin = cluster.admin
    # The first request to a cluster just started: 30 s was once too short on a loaded CI machine.
    admin.create_topics([NewTopic(topic, 3, 3, config={"min.insync.replicas": "2"})])[topic].result(90)
    cluster.edit(kafka_version=NEW)
    planned = cluster.kraftform("plan")
    assert planned.stdout.count(f"kafka_version: {OLD} -> {NEW}") == 6, planned.stdout
    producer = Producer(cluster, topic)
    try:
        applied = cluster.kraftform("apply", "--auto-approve")
    finally:
        acked = producer.stop()
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert all(n.kafka_version == NEW for n in load(cluster.state).nodes)
    assert all(f"kafka-{NEW}" in Path(f"/proc/{n.handle}/cmdline").read_text() for n in load(cluster.state).nodes)
    assert len(acked) > 1000 and not acked - read_values(cluster, topic, 3)
    # The new jars run the old metadata version until the specs ask for the new one.
    assert _metadata_version(cluster.state) == RELEASE_FEATURES["4.3"]["metadata.version"]
    assert cluster.kraftform("plan").returncode == 0

    cluster.edit(metadata_version="4.4")
    planned = cluster.kraftform("plan")
    assert "[destructive] update feature metadata.version level: 30 -> 33" in planned.stdout, planned.stdout
    refused = cluster.kraftform("apply", "--auto-approve")
    assert refused.returncode == 1 and "--allow-destructive" in refused.stderr
    assert _metadata_version(cluster.state) == 30
    assert cluster.kraftform("apply", "--auto-approve", "--allow-destructive").returncode == 0
    assert _metadata_version(cluster.state) == RELEASE_FEATURES["4.4"]["metadata.version"]
    assert cluster.kraftform("plan").returncode == 0

    cluster.edit(metadata_version="4.3")
    lowered = cluster.kraftform("plan")
    assert "refuse feature metadata.version level: 33 -> 30" in lowered.stdout, lowered.stdout
    assert cluster.kraftform("apply", "--auto-approve", "--allow-destructive").returncode == 1
