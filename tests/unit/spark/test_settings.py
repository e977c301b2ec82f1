"""Profiles become Spark options; what Real-time Mode would silently get wrong becomes an error or a fallback."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from kraftform.declared import load_specs
from kraftform.spark.settings import REALTIME_BATCH_MS, SettingsError, job_settings
from kraftform.specset.model import REALTIME, ConsumerSpec, SinkSpec, SparkSpec, SpecSet

from ...conftest import EXAMPLE_SPECS

SPECS = load_specs(EXAMPLE_SPECS)
STATELESS = "SELECT payment_id AS key, to_json(named_struct('a', amount)) AS value FROM input"


def example(name: str, **changes: Any) -> tuple[ConsumerSpec, SpecSet]:
    consumer = dataclasses.replace(next(c for c in SPECS.consumers if c.name == name), **changes)
    return consumer, dataclasses.replace(SPECS, consumers=(consumer,))


def test_durability_reads_committed_data_and_writes_exactly_once() -> None:
    settings = job_settings(*example("fraud-scoring"))
    assert settings.exactly_once and settings.transactional_id == "fraud-scoring-sink"
    assert settings.source_options["kafka.isolation.level"] == "read_committed"
    assert settings.source_options["failOnDataLoss"] == "true"
    assert settings.source_options["maxOffsetsPerTrigger"] == "200000"
    assert (settings.trigger.kind, settings.trigger.interval_ms, settings.output_mode) == ("processing_time", 5000,
                                                                                          "append")
    # Never Spark's 200 shuffle partitions: 2 per core, at most the input's 24.
    assert settings.spark_conf["spark.sql.shuffle.partitions"] == "4"
    assert "jaas" in settings.spark_conf["spark.redaction.regex"]
    assert "jaas" in settings.spark_conf["spark.sql.redaction.options.regex"]


def test_latency_uses_real_time_mode_with_a_slot_per_partition() -> None:
    settings = job_settings(*example("fraud-scoring", profile="latency", trigger=None, max_offsets_per_trigger=None,
                                     query=STATELESS, cores=24))
    assert (settings.trigger.kind, settings.trigger.interval_ms) == ("realtime", REALTIME_BATCH_MS)
    assert settings.output_mode == "update" and not settings.exactly_once
    assert "maxOffsetsPerTrigger" not in settings.source_options and "minPartitions" not in settings.source_options
    assert settings.source_options["kafka.fetch.min.bytes"] == "1"


def test_latency_falls_back_to_fast_micro_batches_rather_than_stall_partitions() -> None:
    settings = job_settings(*example("fraud-scoring", profile="latency", trigger=None, max_offsets_per_trigger=None,
                                     query=STATELESS, cores=2))
    assert (settings.trigger.kind, settings.trigger.interval_ms) == ("processing_time", 0)
    assert settings.source_options["maxOffsetsPerTrigger"] == "10000"
    assert any("24 partitions, 2 cores" in note for note in settings.notes)


@pytest.mark.parametrize(("changes", "message"), [
    ({"cores": 2}, "a task slot per input partition: 24 partitions, 2 cores"),
    ({"cores": 24, "sink": SinkSpec("parquet", path="x")}, "the sink is parquet"),
    ({"cores": 24, "max_offsets_per_trigger": 10}, "max_offsets_per_trigger is set"),
])
def test_an_explicit_realtime_trigger_that_cannot_work_is_an_error(changes: dict[str, Any], message: str) -> None:
    consumer, specs = example("fraud-scoring", **{"profile": "latency", "trigger": REALTIME,
                                                  "max_offsets_per_trigger": None, "query": STATELESS, **changes})
    with pytest.raises(SettingsError, match=message):
        job_settings(consumer, specs)


def test_realtime_refuses_a_stateful_query() -> None:
    consumer, specs = example("clickstream-sessionizer", profile="latency", trigger=REALTIME, cores=24,
                              sink=SinkSpec("kafka", topic="clickstream.sessions.v1"))
    with pytest.raises(SettingsError, match="the query keeps state"):
        job_settings(consumer, specs)


def test_throughput_splits_a_small_input_across_the_cores() -> None:
    consumer, specs = example("clickstream-sessionizer", cores=16)
    settings = job_settings(consumer, specs)
    assert settings.source_options["minPartitions"] == "32"  # 24 partitions < 2 x 16 cores
    assert settings.source_options["kafka.fetch.min.bytes"] == "100000"
    assert settings.exactly_once  # a Parquet sink always writes whole batches
    assert "minPartitions" not in job_settings(*example("clickstream-sessionizer", cores=2)).source_options


def test_a_profile_trigger_that_is_not_a_duration_is_named() -> None:
    consumer, specs = example("fraud-scoring", trigger=None)
    profile = dataclasses.replace(specs.profiles["durability"], spark={"trigger": "soon"})
    with pytest.raises(SettingsError, match=r"profile 'durability': spark.trigger 'soon'"):
        job_settings(consumer, dataclasses.replace(specs, profiles={**specs.profiles, "durability": profile}))


@pytest.mark.parametrize(("master", "url"), [
    ("standalone", "spark://platform-spark-master:7077"),
    ("spark://spark.example.com:7077", "spark://spark.example.com:7077"),
    ("k8s://https://k8s.example.com:6443", "k8s://https://k8s.example.com:6443"),
])
def test_a_consumer_is_submitted_to_the_master_the_cluster_spec_names(master: str, url: str) -> None:
    consumer, specs = example("fraud-scoring", cores=3)
    cluster = dataclasses.replace(specs.cluster, spark=SparkSpec(master=master, worker_cores=2))
    settings = job_settings(consumer, dataclasses.replace(specs, cluster=cluster))
    assert settings.master == url
    # Client mode: the consumer's cores are what it takes of the cluster, in executors a worker can hold.
    assert (settings.spark_conf["spark.cores.max"], settings.spark_conf["spark.executor.cores"]) == ("3", "2")
    assert f"submitted to {url} in client mode" in " ".join(settings.notes)
    local = job_settings(consumer, specs)
    assert local.master == "local[3]" and "spark.cores.max" not in local.spark_conf
