"""A consumer's container as data: what the Docker runtime runs (and the Pulumi program will)."""

from __future__ import annotations

import javaproperties

from kraftform.cluster.containers import HOST_NETWORK
from kraftform.declared import load_specs
from kraftform.spark.containers import (
    CLIENT_CONFIG,
    HEARTBEAT,
    JOB_FILE,
    WORK_DIR,
    consumer_container,
    consumers_volume,
    container_name,
    spark_cluster_containers,
    spark_master_name,
)
from kraftform.specset.model import Host, SparkSpec

from ...conftest import EXAMPLE_SPECS


def test_a_consumer_runs_the_cli_job_with_its_own_login_from_a_private_file() -> None:
    specs = load_specs(EXAMPLE_SPECS)
    consumer = next(c for c in specs.consumers if c.name == "fraud-scoring")
    spec = consumer_container(consumer, "platform", '{"job": 1}\n', "platform-broker-0:9092,platform-broker-1:9092",
                              "SCRAM-SHA-512", 'p"w\\d', "CA PEM", "platform-net", "kraftform/spark:4.2.0-abc")
    assert spec.name == container_name("platform", "fraud-scoring") == "platform-consumer-fraud-scoring"
    assert spec.command == ("kraftform", "consumers", "run", "fraud-scoring", "--job", JOB_FILE, "--command-config",
                            CLIENT_CONFIG, "--data-dir", WORK_DIR, "--heartbeat", HEARTBEAT)
    assert (spec.volume, spec.volume_path) == (consumers_volume("platform"), WORK_DIR)
    assert spec.labels == {"dev.kraftform.cluster": "platform", "dev.kraftform.consumer": "fraud-scoring"}
    assert spec.ports == ()  # nothing published: it only reaches out to the brokers
    files = {f.path: f for f in spec.files}
    # Of the specs, only the consumer's job manifest: an edit elsewhere leaves the container as it is.
    assert set(files) == {JOB_FILE, "/etc/kraftform/ca.pem", CLIENT_CONFIG}
    assert files[JOB_FILE].content == '{"job": 1}\n' and not files[JOB_FILE].secret
    client = files[CLIENT_CONFIG]
    assert client.mode == 0o600 and client.secret
    config = dict(javaproperties.loads(client.content))
    assert config["bootstrap.servers"] == "platform-broker-0:9092,platform-broker-1:9092"
    assert (config["security.protocol"], config["ssl.truststore.location"]) == ("SASL_SSL", "/etc/kraftform/ca.pem")
    assert config["sasl.jaas.config"].endswith(' required username="fraud-scoring" password="p\\"w\\\\d";')
    # Healthy once this container's job has touched its heartbeat recently: its query runs and finished a
    # micro-batch. The heartbeat is in the container's own file system, never on the shared volume, where a
    # predecessor's would have made a broken replacement look healthy.
    assert spec.healthcheck is not None and HEARTBEAT in spec.healthcheck.test[-1]
    assert not HEARTBEAT.startswith(WORK_DIR)
    assert spec.healthcheck.start_period_s >= 120


def test_a_standalone_cluster_is_a_master_and_workers_sharing_the_consumers_volume() -> None:
    spark = SparkSpec(master="standalone", workers=2, worker_cores=3, worker_memory_bytes=1536 * 2**20)
    master, *workers = spark_cluster_containers("platform", spark, "kraftform/spark:4.2.0-abc", "platform-net",
                                                "CA PEM")
    assert master.name == spark_master_name("platform") == "platform-spark-master"
    assert master.command[:2] == ("spark-class", "org.apache.spark.deploy.master.Master")
    assert [w.name for w in workers] == ["platform-spark-worker-0", "platform-spark-worker-1"]
    worker = workers[0]
    assert worker.command[-1] == "spark://platform-spark-master:7077"
    assert worker.command[4:6] == ("--cores", "3") and worker.command[6:8] == ("--memory", "1536m")
    # Executors write checkpoint state and Parquet files where the consumers' drivers read them.
    assert {(s.volume, s.volume_path) for s in (master, *workers)} == {(consumers_volume("platform"), WORK_DIR)}
    assert all(s.ports == () and [(f.path, f.content) for f in s.files] == [("/etc/kraftform/ca.pem", "CA PEM")]
               for s in (master, *workers))  # executors read Kafka with the driver's truststore path
    assert worker.healthcheck is not None and "platform-spark-worker-0" in worker.healthcheck.test[-1]
    assert {s.labels["dev.kraftform.spark"] for s in (master, *workers)} == {"master", "worker"}


def test_on_hosts_the_master_runs_on_the_first_spark_host_a_worker_on_each_all_on_the_shared_dir() -> None:
    hosts = (Host("a", "unix:///run/a.sock", "10.0.0.1"), Host("b", "unix:///run/b.sock", "10.0.0.2"))
    spark = SparkSpec(master="standalone", workers=2, worker_cores=1, shared_dir="/mnt/kf")
    master, *workers = spark_cluster_containers("platform", spark, "kraftform/spark:4.2.0-abc", HOST_NETWORK,
                                                "CA PEM", hosts)
    assert (master.host, master.command[-6:-2]) == ("a", ("--host", "10.0.0.1", "--port", "7077"))
    assert [(w.name, w.host) for w in workers] == [("platform-spark-worker-a", "a"), ("platform-spark-worker-b", "b")]
    assert workers[1].command[2:4] == ("--host", "10.0.0.2") and workers[1].command[-1] == "spark://10.0.0.1:7077"
    for spec, host in zip((master, *workers), (hosts[0], *hosts), strict=True):
        # In the host's own network, bound to and advertising its address (the executors a worker starts too).
        assert (spec.network, spec.aliases, spec.labels["dev.kraftform.host"]) == (HOST_NETWORK, (), host.name)
        assert spec.env == {"SPARK_LOCAL_IP": host.address, "SPARK_LOCAL_HOSTNAME": host.address}
        assert (spec.volume, spec.volume_path) == ("/mnt/kf", WORK_DIR)
    assert workers[1].healthcheck is not None and "http://10.0.0.1:8080/json/" in workers[1].healthcheck.test[-1]
    consumer = next(c for c in load_specs(EXAMPLE_SPECS).consumers if c.name == "fraud-scoring")
    driver = consumer_container(consumer, "platform", "{}", "10.0.0.1:29092,10.0.0.2:29093", "SCRAM-SHA-512", "pw",
                                "CA PEM", HOST_NETWORK, "kraftform/spark:4.2.0-abc", hosts[0], "/mnt/kf")
    assert (driver.host, driver.network, driver.volume, driver.env["SPARK_LOCAL_IP"]) == (
        "a", HOST_NETWORK, "/mnt/kf", "10.0.0.1")
