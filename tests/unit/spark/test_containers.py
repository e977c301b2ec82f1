"""A consumer's container as data: what the Docker runtime runs (and the Pulumi program will)."""

from __future__ import annotations

import javaproperties

from kraftform.cluster.containers import HOST_NETWORK, ContainerSpec
from kraftform.declared import load_specs
from kraftform.spark.containers import (
    CLIENT_CONFIG,
    HEARTBEAT,
    JOB_FILE,
    LABEL_SPEC,
    SPARK_CONF_DIR,
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
                                                "CA PEM", "s3cret")
    assert master.name == spark_master_name("platform") == "platform-spark-master"
    assert master.command[:2] == ("spark-class", "org.apache.spark.deploy.master.Master")
    assert [w.name for w in workers] == ["platform-spark-worker-0", "platform-spark-worker-1"]
    worker = workers[0]
    assert worker.command[-1] == "spark://platform-spark-master:7077"
    assert worker.command[4:6] == ("--cores", "3") and worker.command[6:8] == ("--memory", "1536m")
    # Executors write checkpoint state and Parquet files where the consumers' drivers read them.
    assert {(s.volume, s.volume_path) for s in (master, *workers)} == {(consumers_volume("platform"), WORK_DIR)}
    assert all(s.ports == () and [f.path for f in s.files] == ["/etc/kraftform/ca.pem", DEFAULTS]
               for s in (master, *workers))  # executors read Kafka with the driver's truststore path
    assert {s.labels["dev.kraftform.spark"] for s in (master, *workers)} == {"master", "worker"}
    # Their UIs on loopback: each checks its own, a worker that it registered with the master.
    for spec in (master, *workers):
        assert spec.env["SPARK_LOCAL_IP"] == "127.0.0.1" and spec.healthcheck is not None
        assert "http://localhost:80" in spec.healthcheck.test[-1]
    assert worker.env["SPARK_LOCAL_HOSTNAME"] == "platform-spark-worker-0"
    assert worker.healthcheck is not None and "masterurl" in worker.healthcheck.test[-1]


DEFAULTS = f"{SPARK_CONF_DIR}/spark-defaults.conf"


def _conf(spec: ContainerSpec) -> dict[str, str]:
    found = next(f for f in spec.files if f.path == DEFAULTS)
    assert found.secret and found.mode == 0o600 and spec.env["SPARK_CONF_DIR"] == SPARK_CONF_DIR
    return dict(line.split(" ", 1) for line in found.content.splitlines())


def test_every_part_of_a_standalone_cluster_authenticates_with_its_secret_from_a_private_file() -> None:
    """The master, the workers and a driver submitting to them read one secret from spark-defaults.conf (mode 0600,
    a secret upload), never from a command line or the environment; their RPC is encrypted, no UI kills."""
    spark = SparkSpec(master="standalone", workers=1)
    made = spark_cluster_containers("platform", spark, "kraftform/spark:4.2.0-abc", "platform-net", "CA", "s3cret")
    consumer = next(c for c in load_specs(EXAMPLE_SPECS).consumers if c.name == "fraud-scoring")
    driver = consumer_container(consumer, "platform", "{}", "b:9092", "SCRAM-SHA-512", "pw", "CA", "platform-net",
                                "kraftform/spark:4.2.0-abc", spark_secret="s3cret")
    for spec in (*made, driver):
        assert _conf(spec) == {"spark.authenticate": "true", "spark.authenticate.secret": "s3cret",
                               "spark.network.crypto.enabled": "true", "spark.ui.killEnabled": "false"}
        assert not any("s3cret" in part for part in spec.command) and "s3cret" not in str(spec.env)
    # A local master's driver holds none (it starts no cluster to authenticate to).
    local = consumer_container(consumer, "platform", "{}", "b:9092", "SCRAM-SHA-512", "pw", "CA", "platform-net",
                               "kraftform/spark:4.2.0-abc")
    assert DEFAULTS not in {f.path for f in local.files} and local.env == {}


def test_a_master_or_worker_is_kept_only_while_what_it_runs_is_unchanged() -> None:
    """`consumers up` keeps a running master or worker whose spec digest matches: a new secret, core count or
    image is a new digest, the same inputs the same one."""
    spark = SparkSpec(master="standalone", workers=1, worker_cores=1)

    def digests(secret: str, cores: int, image: str) -> list[str]:
        made = spark_cluster_containers("p", SparkSpec(master="standalone", workers=1, worker_cores=cores), image,
                                        "net", "CA", secret)
        return [s.labels[LABEL_SPEC] for s in made]

    base = digests("s1", 1, "img:1")
    assert digests("s1", spark.worker_cores, "img:1") == base
    assert digests("s2", 1, "img:1")[0] != base[0]
    assert digests("s1", 2, "img:1")[1] != base[1] and digests("s1", 2, "img:1")[0] == base[0]
    assert digests("s1", 1, "img:2")[0] != base[0]


def test_on_hosts_the_master_runs_on_the_first_spark_host_a_worker_on_each_all_on_the_shared_dir() -> None:
    hosts = (Host("a", "unix:///run/a.sock", "10.0.0.1"), Host("b", "unix:///run/b.sock", "10.0.0.2"))
    spark = SparkSpec(master="standalone", workers=2, worker_cores=1, shared_dir="/mnt/kf")
    master, *workers = spark_cluster_containers("platform", spark, "kraftform/spark:4.2.0-abc", HOST_NETWORK,
                                                "CA PEM", "s3cret", hosts)
    assert (master.host, master.command[-6:-2]) == ("a", ("--host", "10.0.0.1", "--port", "7077"))
    assert [(w.name, w.host) for w in workers] == [("platform-spark-worker-a", "a"), ("platform-spark-worker-b", "b")]
    assert workers[1].command[2:4] == ("--host", "10.0.0.2") and workers[1].command[-1] == "spark://10.0.0.1:7077"
    for spec, host in zip((master, *workers), (hosts[0], *hosts), strict=True):
        # In the host's own network, its RPC bound to and advertising its address (the executors a worker starts
        # too), its UI on the host's loopback alone.
        assert (spec.network, spec.aliases, spec.labels["dev.kraftform.host"]) == (HOST_NETWORK, (), host.name)
        assert spec.env == {"SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_HOSTNAME": host.address,
                            "SPARK_CONF_DIR": SPARK_CONF_DIR}
        assert (spec.volume, spec.volume_path) == ("/mnt/kf", WORK_DIR)
        assert spec.healthcheck is not None and "10.0.0" not in spec.healthcheck.test[-1]
    consumer = next(c for c in load_specs(EXAMPLE_SPECS).consumers if c.name == "fraud-scoring")
    driver = consumer_container(consumer, "platform", "{}", "10.0.0.1:29092,10.0.0.2:29093", "SCRAM-SHA-512", "pw",
                                "CA PEM", HOST_NETWORK, "kraftform/spark:4.2.0-abc", hosts[0], "/mnt/kf", "s3cret")
    assert (driver.host, driver.network, driver.volume, driver.env["SPARK_LOCAL_IP"]) == (
        "a", HOST_NETWORK, "/mnt/kf", "10.0.0.1")
    assert driver.env["SPARK_CONF_DIR"] == SPARK_CONF_DIR
