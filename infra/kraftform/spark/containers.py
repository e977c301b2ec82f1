"""A streaming consumer as a container, as plain data. Pure.

The Docker runtime (`kraftform consumers up`) runs these objects, as it runs the brokers' `container_specs`,
so a consumer in a container is the same job a user runs with `kraftform consumers run`: the container's
command is that command, against the consumer's job manifest and a client config copied in.

The contract with the image (`kraftform images build` makes `kraftform/spark:<version>-<code digest>`):
`kraftform` on PATH with pyspark and its Kafka connector, a JRE, user id 1000 with a writable home
(SPARK_HOME_DIR), WORK_DIR writable. The consumer logs in over SASL_SSL as its own SCRAM user through the
brokers' in-network CLIENT listener; its password is in the client config file (mode 0600, the container
user's), never in the environment, where `docker inspect` would show it. Checkpoints and Parquet output live
on a named volume that outlives the container, so a redeployed consumer continues from its checkpoint.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping

from kraftform.cluster.connection import Connection
from kraftform.cluster.containers import (
    HOST_NETWORK,
    LABEL_CLUSTER,
    LABEL_HOST,
    ContainerFile,
    ContainerSpec,
    Healthcheck,
)
from kraftform.specset.hosts import SPARK_MASTER_PORT
from kraftform.specset.model import ConsumerSpec, Host, SparkSpec

SPARK_VENV = "/opt/kraftform/venv"
SPARK_CACHE = "/opt/kraftform/cache"
SPARK_HOME_DIR = "/home/kraftform"
#: Checkpoints, relative sink paths and event logs: the consumer's volume.
WORK_DIR = "/var/lib/kraftform"
#: The consumer's job manifest (`spark.manifest`): all of the specs the container holds.
JOB_FILE = "/etc/kraftform/job.json"
CLIENT_CONFIG = "/etc/kraftform/client.properties"
CA_FILE = "/etc/kraftform/ca.pem"
#: What `consumers run --heartbeat` touches (at most every few seconds) once this run finished a micro-batch.
HEARTBEAT = f"{SPARK_HOME_DIR}/heartbeat"
#: A consumer whose heartbeat is older than this is unhealthy (its query stopped making progress).
STALE_AFTER_MIN = 2
#: A JVM, a Spark session and the first micro-batch take a while on two cores: not unhealthy meanwhile.
START_PERIOD_S = 240

LABEL_CONSUMER = "dev.kraftform.consumer"
#: On the standalone master and workers, with the role as its value.
LABEL_SPARK = "dev.kraftform.spark"
SPARK_MASTER_UI_PORT = 8080
SPARK_WORKER_UI_PORT = 8081
#: Where every container of a standalone cluster (master, workers, drivers) finds `spark-defaults.conf`: Spark's
#: own daemons and spark-submit read it from SPARK_CONF_DIR, so the shared secret is in no command line.
SPARK_CONF_DIR = "/etc/kraftform/spark"
#: On the master's and workers' containers: a digest of what they run (`spec_digest`), so `consumers up` keeps
#: one running only while it is what the specs describe.
LABEL_SPEC = "dev.kraftform.spec"


def standalone_conf(secret: str) -> ContainerFile:
    """Spark's own authentication for a standalone cluster: the master, the workers and each driver prove the
    shared `secret` on every RPC connection (an application without it is refused), which is then encrypted
    (AES, `spark.network.crypto`), so the job's options (the consumer's SCRAM login among them) never cross
    a network in clear. A worker hands the secret to the executors it starts in their environment, as Spark
    does. Nothing can be killed through a UI."""
    conf = {"spark.authenticate": "true", "spark.authenticate.secret": secret,
            "spark.network.crypto.enabled": "true", "spark.ui.killEnabled": "false"}
    return ContainerFile(f"{SPARK_CONF_DIR}/spark-defaults.conf", "".join(f"{k} {v}\n" for k, v in conf.items()),
                         mode=0o600, secret=True)


def spec_digest(spec: ContainerSpec) -> str:
    """What a container runs, as one value: a running one with another digest is not what the specs describe.
    Its files go in hashed (the secret's hash says nothing of a random secret)."""
    files = [(f.path, f.mode, hashlib.sha256(f.content.encode()).hexdigest()) for f in spec.files]
    made = {"image": spec.image, "command": spec.command, "env": dict(spec.env), "files": files,
            "volume": spec.volume, "network": spec.network, "memory": spec.memory_bytes,
            "health": dataclasses.asdict(spec.healthcheck) if spec.healthcheck else None}
    return hashlib.sha256(json.dumps(made, sort_keys=True).encode()).hexdigest()[:16]


def on_host(host: Host | None) -> Mapping[str, str]:
    """What a driver in its host's own network is told, so it advertises the host's address; nothing off hosts."""
    return {"SPARK_LOCAL_IP": host.address, "SPARK_LOCAL_HOSTNAME": host.address} if host else {}


def daemon_env(address: str) -> Mapping[str, str]:
    """What the standalone master and a worker are told: their UIs bind to SPARK_LOCAL_IP, loopback, so only the
    machine (or, off hosts, the container) they run on reaches them; their RPC binds to `--host`, and Spark
    names them by `address`, the same (not "localhost", which SPARK_LOCAL_IP alone would make it)."""
    return {"SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_HOSTNAME": address}


def _placed(spec: ContainerSpec, host: Host | None, shared_dir: str) -> ContainerSpec:
    """`spec` on `host`'s engine and network, its data in `shared_dir` (a path on the host) when given."""
    if host is None:
        return spec
    return dataclasses.replace(spec, network=HOST_NETWORK, aliases=(), host=host.name,
                               env={**on_host(host), **spec.env}, volume=shared_dir or spec.volume,
                               labels={**spec.labels, LABEL_HOST: host.name})


def spark_master_name(cluster: str) -> str:
    """The standalone master's container, host name and network alias."""
    return f"{cluster}-spark-master"


def container_name(cluster: str, consumer: str) -> str:
    return f"{cluster}-consumer-{consumer}"


def consumers_volume(cluster: str) -> str:
    """The volume the consumers and the standalone workers share, at WORK_DIR in each: checkpoints (with state
    executors write), Parquet output, event logs, heartbeats, each under the consumer's own paths. Named after
    the cluster, so a redeploy (or a move between local and standalone masters) finds it again."""
    return f"{cluster}-consumers-data"


def consumer_container(consumer: ConsumerSpec, cluster: str, job: str, bootstrap: str, mechanism: str,
                       password: str, ca_pem: str, network: str, image: str, host: Host | None = None,
                       shared_dir: str = "", spark_secret: str = "") -> ContainerSpec:
    """One consumer running `kraftform consumers run --job` (on the master its manifest names) against
    `bootstrap`, the brokers' in-network listener (on `host`: their hosts' addresses, from its network, its data in
    `shared_dir` when given). `job` is the consumer's manifest (`spark.manifest`): the container holds nothing
    else of the specs, so an edit elsewhere leaves it untouched. A driver submitting to the standalone cluster
    holds its `spark_secret` (`standalone_conf`)."""
    name = container_name(cluster, consumer.name)
    client = Connection.scram(bootstrap, consumer.user, password, mechanism, CA_FILE).java_properties(
        f"consumer {consumer.name}: its own login, over the brokers' in-network listener")
    files = (
        ContainerFile(JOB_FILE, job),
        ContainerFile(CA_FILE, ca_pem),
        ContainerFile(CLIENT_CONFIG, client, mode=0o600, secret=True),
        *((standalone_conf(spark_secret),) if spark_secret else ()),
    )
    # The heartbeat lives in the container's own file system, not on the shared volume: a replacement (or the
    # same container restarted after its job failed) is healthy only once its own run finished a micro-batch.
    check = Healthcheck(("CMD", "sh", "-c", f'test -n "$(find {HEARTBEAT} -mmin -{STALE_AFTER_MIN} 2>/dev/null)"'),
                        interval_s=5, timeout_s=5, retries=3, start_period_s=START_PERIOD_S)
    return _placed(ContainerSpec(
        name=name, hostname=name, image=image,
        command=("kraftform", "consumers", "run", consumer.name, "--job", JOB_FILE, "--command-config",
                 CLIENT_CONFIG, "--data-dir", WORK_DIR, "--heartbeat", HEARTBEAT),
        network=network, aliases=(name,), volume=consumers_volume(cluster), volume_path=WORK_DIR,
        files=files, healthcheck=check, labels={LABEL_CLUSTER: cluster, LABEL_CONSUMER: consumer.name},
        env={"SPARK_CONF_DIR": SPARK_CONF_DIR} if spark_secret else {}), host, shared_dir)


def _probe(url: str, condition: str) -> tuple[str, ...]:
    """A health check in the image's Python (it has no curl): GET `url` as JSON, healthy if `condition` holds."""
    script = (f"import json, urllib.request; j = json.load(urllib.request.urlopen({url!r}, timeout=3)); "
              f"assert {condition}")
    return ("CMD", "python", "-c", script)


def spark_cluster_containers(cluster: str, spark: SparkSpec, image: str, network: str, ca_pem: str, secret: str,
                             hosts: tuple[Host, ...] = ()) -> tuple[ContainerSpec, ...]:
    """A Spark standalone master and `spark.workers` workers from the consumers' image, for `master:
    standalone`, authenticating with `secret` (`standalone_conf`). Workers mount the consumers' volume at the same
    path (executors write checkpoint state and Parquet files where the driver reads them) and hold the cluster's
    CA where the consumers do (executors read Kafka with the driver's options, the truststore path among them).
    On `hosts` (`specset.hosts.spark_hosts`): the master on the first, a worker on each, every one in its host's
    network at its address, all mounting `spark.shared_dir`. Their UIs answer on loopback alone (`daemon_env`)."""
    master = spark_master_name(cluster)
    first = hosts[0] if hosts else None
    master_host = first.address if first else master
    files = (ContainerFile(CA_FILE, ca_pem), standalone_conf(secret))

    def node(name: str, role: str, address: str, command: tuple[str, ...], ready: tuple[str, ...],
             host: Host | None) -> ContainerSpec:
        spec = _placed(ContainerSpec(name=name, hostname=name, image=image, command=("spark-class", *command),
                                     network=network, aliases=(name,), volume=consumers_volume(cluster),
                                     volume_path=WORK_DIR, files=files,
                                     healthcheck=Healthcheck(ready, start_period_s=10),
                                     labels={LABEL_CLUSTER: cluster, LABEL_SPARK: role},
                                     env={**daemon_env(address), "SPARK_CONF_DIR": SPARK_CONF_DIR}),
                       host, spark.shared_dir)
        return dataclasses.replace(spec, labels={**spec.labels, LABEL_SPEC: spec_digest(spec)})

    made = [node(master, "master", master_host,
                 ("org.apache.spark.deploy.master.Master", "--host", master_host, "--port", str(SPARK_MASTER_PORT),
                  "--webui-port", str(SPARK_MASTER_UI_PORT)),
                 _probe(f"http://localhost:{SPARK_MASTER_UI_PORT}/json/", "j['status'] == 'ALIVE'"), first)]
    workers: tuple[tuple[str, Host | None], ...] = tuple(
        (f"{cluster}-spark-worker-{h.name}", h) for h in hosts) or tuple(
        (f"{cluster}-spark-worker-{index}", None) for index in range(spark.workers))
    for name, host in workers:
        address = host.address if host else name
        made.append(node(
            name, "worker", address,
            ("org.apache.spark.deploy.worker.Worker", "--host", address, "--cores", str(spark.worker_cores),
             "--memory", f"{spark.worker_memory_bytes // 2**20}m", "--webui-port", str(SPARK_WORKER_UI_PORT),
             "--work-dir", f"{WORK_DIR}/spark-work/{name}", f"spark://{master_host}:{SPARK_MASTER_PORT}"),
            # Healthy once registered: the master answered it (with the shared secret) and it serves executors.
            _probe(f"http://localhost:{SPARK_WORKER_UI_PORT}/json/", "j['masterurl'].startswith('spark://')"),
            host))
    return tuple(made)
