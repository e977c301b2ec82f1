"""A consumer's container as data: what the Docker runtime runs (and the Pulumi program will)."""

from __future__ import annotations

import javaproperties

from kraftform.spark.containers import (
    CLIENT_CONFIG,
    SPECS_DIR,
    WORK_DIR,
    consumer_container,
    consumer_volume,
    container_name,
)
from kraftform.spec.loader import load_specs

from ...conftest import EXAMPLE_SPECS


def test_a_consumer_runs_the_cli_job_with_its_own_login_from_a_private_file() -> None:
    specs = load_specs(EXAMPLE_SPECS)
    consumer = next(c for c in specs.consumers if c.name == "fraud-scoring")
    spec = consumer_container(consumer, "platform", {"topics.yaml": "topics: []\n", "sub/users.yaml": "users: []\n"},
                              "platform-broker-0:9092,platform-broker-1:9092", "SCRAM-SHA-512", 'p"w\\d', "CA PEM",
                              "platform-net", "kraftform/spark:4.2.0-abc")
    assert spec.name == container_name("platform", "fraud-scoring") == "platform-consumer-fraud-scoring"
    assert spec.command == ("kraftform", "consumers", "run", "fraud-scoring", SPECS_DIR, "--command-config",
                            CLIENT_CONFIG, "--data-dir", WORK_DIR)
    assert (spec.volume, spec.volume_path) == (consumer_volume("platform", "fraud-scoring"), WORK_DIR)
    assert spec.labels == {"dev.kraftform.cluster": "platform", "dev.kraftform.consumer": "fraud-scoring"}
    assert spec.ports == ()  # nothing published: it only reaches out to the brokers
    files = {f.path: f for f in spec.files}
    assert set(files) == {f"{SPECS_DIR}/topics.yaml", f"{SPECS_DIR}/sub/users.yaml", "/etc/kraftform/ca.pem",
                          CLIENT_CONFIG}
    client = files[CLIENT_CONFIG]
    assert client.mode == 0o600 and client.secret
    config = dict(javaproperties.loads(client.content))
    assert config["bootstrap.servers"] == "platform-broker-0:9092,platform-broker-1:9092"
    assert (config["security.protocol"], config["ssl.truststore.location"]) == ("SASL_SSL", "/etc/kraftform/ca.pem")
    assert config["sasl.jaas.config"].endswith(' required username="fraud-scoring" password="p\\"w\\\\d";')
    # Healthy once the job has touched its heartbeat recently: its query runs and finished a micro-batch.
    assert spec.healthcheck is not None and f"{WORK_DIR}/health/fraud-scoring" in spec.healthcheck.test[-1]
    assert spec.healthcheck.start_period_s >= 120
