"""A Kafka Connect cluster for the package's tests: a real distributed worker (Kafka's connect-runtime from Maven
Central, Debezium's PostgreSQL plugin declared with its checksum) started by `kraftform connect up` beside a `fast`
cluster of the package's own, and a real PostgreSQL (Debian's package, `runtime.postgres`) for Debezium to capture."""

from __future__ import annotations

import base64
import json
import os
import random
import secrets
import shutil
import ssl
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from kraftform.declared import load_specs
from kraftform.kafka.apply import ApplyOptions
from kraftform.kafka.reconcile import apply_cluster, plan_cluster
from kraftform.runtime.nodes.local import listening
from kraftform.runtime.postgres import LocalPostgres
from kraftform.testing.cluster import EphemeralCluster, ephemeral_cluster
from kraftform.testing.variant import for_tests
from kraftform.verification.secretscan import CommandLineSampler

from ..conftest import CLUSTER_SPECS

PG_PASSWORD_ENV = "KC_PG_PASSWORD"

#: Debezium's PostgreSQL connector from Maven Central, as a user declares a plugin: its jar's SHA-256 pinned.
DEBEZIUM = {"name": "debezium-postgres", "maven": "io.debezium:debezium-connector-postgres:3.6.1.Final",
            "sha256": "e7bb97f00f97ec78d7c39b19e2b0797739438433b6acaa0941e18dbc2da0d854"}
POSTGRES_CONNECTOR = "io.debezium.connector.postgresql.PostgresConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
PASSWORD_ENV = "KRAFTFORM_PASSWORD_ORDERS_CONNECT"
FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
#: How long `connect apply` waits for connectors to run as declared, in the tests that do not catch a task failing
#: after its start (those pass Connect's production window, `--stable-for 10`).
STABLE_S = 3
#: A user a connector logs in as of its own (not the workers' user).
ARCHIVER = "orders-archiver"
ARCHIVER_PASSWORD_ENV = "KRAFTFORM_PASSWORD_ORDERS_ARCHIVER"


@dataclass
class Connected:
    cluster: EphemeralCluster
    root: Path
    files: Path
    connect: dict[str, Any]
    #: Every process's command line sampled while `connect up` started the workers.
    up_command_lines: frozenset[str] = frozenset()

    orders, lines, other = "orders.created", "orders.lines", "orders.other"
    #: Where Debezium writes the `public.orders` table's changes (`topic.prefix` cdc).
    cdc = "cdc.public.orders"

    @property
    def name(self) -> str:
        return str(self.connect["name"])

    @property
    def dir(self) -> Path:
        return self.cluster.state_dir / "connect" / self.name

    def connector(self, name: str) -> dict[str, Any]:
        return next(c for c in self.connect["connectors"] if c["name"] == name)

    def write(self) -> None:
        (self.root / "connect.yaml").write_text(yaml.safe_dump({"connect": [self.connect]}))

    def kraftform(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        """`kraftform connect COMMAND [NAME] SPECS --state-dir DIR ...`: the specs and state after the command's
        own positional (a connector's name for `offsets`); `apply` waits STABLE_S unless told."""
        command, *rest = args
        if command == "offsets":
            command, rest = f"offsets {rest[0]}", rest[1:]
        if command == "apply" and "--stable-for" not in rest:
            rest += ["--stable-for", str(STABLE_S)]
        return subprocess.run([sys.executable, "-m", "kraftform", "connect", *command.split(), str(self.root),
                               "--state-dir", str(self.cluster.state_dir), *rest], capture_output=True, text=True,
                              timeout=timeout, check=False)

    def apply_kafka(self) -> None:
        """What `kraftform apply` does for the specs as the test cluster runs them (its name, one broker, its
        users' passwords): the Kafka objects a connector needs, its grants among them."""
        specs = for_tests(load_specs(self.root), "fast", self.cluster.name)
        live = plan_cluster(self.cluster.admin, specs, found=dict(self.cluster.passwords))
        left = apply_cluster(self.cluster.admin, specs, live, ApplyOptions(), progress=lambda _line: None)
        assert left.plan.empty, left.plan

    def worker(self) -> dict[str, Any]:
        return dict(json.loads((self.dir / "workers.json").read_text())[0])

    def rest(self, method: str, path: str, body: Any = None, password: str | None = None) -> Any:
        worker = self.worker()
        headers = {"Content-Type": "application/json"}
        if password != "":
            secret = password or json.loads((self.dir / "secrets.json").read_text())["rest_password"]
            headers["Authorization"] = "Basic " + base64.b64encode(f"kraftform:{secret}".encode()).decode()
        context = ssl.create_default_context(cafile=self.cluster.admin.ca_path)
        request = urllib.request.Request(f"https://{worker['host']}:{worker['port']}{path}",
                                         None if body is None else json.dumps(body).encode(), headers, method=method)
        with urllib.request.urlopen(request, timeout=30, context=context) as response:
            raw = response.read()
        return json.loads(raw) if raw else None


def _free_port() -> int:
    while True:
        port = random.randint(20000, 29000)
        if not listening("127.0.0.1", port):
            return port


@pytest.fixture(scope="package")
def connected(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Connected]:
    """A `fast` cluster of the package's own (replication is not the subject: one combined node), its specs the
    test cluster's cluster section, the topics, the Connect cluster's user and the `connect:` section; a worker
    started as users start it, with the database password its Debezium connector reads in its environment."""
    base = tmp_path_factory.mktemp("connect")
    root, files = base / "specs", base / "files"
    root.mkdir()
    files.mkdir()
    (files / "in.txt").write_text("")
    shutil.copy(CLUSTER_SPECS / "cluster.yaml", root / "cluster.yaml")
    (root / "kafka.yaml").write_text(yaml.safe_dump({
        "topics": [{"name": Connected.orders, "partitions": 3}, {"name": Connected.lines, "partitions": 1},
                   {"name": Connected.other, "partitions": 1}, {"name": Connected.cdc, "partitions": 1}],
        "users": [{"name": "orders-connect", "password": {"env": PASSWORD_ENV}},
                  {"name": ARCHIVER, "password": {"env": ARCHIVER_PASSWORD_ENV}}]}))
    connect = {
        "name": "orders-connect", "user": "orders-connect", "rest_port": _free_port(),
        "internal_topics": {"offsets_partitions": 3, "status_partitions": 1},
        # A worker that left gets its tasks back, or they go to another, after this delay (Connect's default is 5
        # minutes, KIP-415: a rolling restart should not shuffle tasks); the SIGKILL test waits for it.
        "config": {"offset.flush.interval.ms": 1000, "scheduled.rebalance.max.delay.ms": 10000},
        "plugins": [dict(DEBEZIUM)],
        "connectors": [
            {"name": "archive", "class": FILE_SINK, "type": "sink", "topics": [Connected.orders],
             "config": {"file": str(files / "archive.txt")}},
            {"name": "lines", "class": FILE_SOURCE, "type": "source", "topics": [Connected.lines],
             "config": {"file": str(files / "in.txt"), "topic": Connected.lines}},
        ],
    }
    (root / "connect.yaml").write_text(yaml.safe_dump({"connect": [connect]}))
    # The internal topics, the user and its derived grants are Kafka objects: the test cluster applies them.
    os.environ[PG_PASSWORD_ENV] = secrets.token_urlsafe(16)  # read by the workers, as a connector secret
    with ephemeral_cluster(root, "fast", "local", base_dir=base / "clusters") as cluster:
        os.environ[PASSWORD_ENV] = cluster.passwords["orders-connect"]
        os.environ[ARCHIVER_PASSWORD_ENV] = cluster.passwords[ARCHIVER]
        c = Connected(cluster, root, files, connect)
        with CommandLineSampler(0.02) as sampler:
            up = c.kraftform("up")
        c.up_command_lines = frozenset(sampler.seen)
        assert up.returncode == 0, up.stdout + up.stderr
        try:
            yield c
        finally:
            # The workers' logs outlive the purge, in pytest's kept temporary directories: what a failure looks into.
            for log in c.dir.glob("worker-*/worker.log"):
                shutil.copy(log, base / f"{log.parent.name}.log")
            c.kraftform("down", "--purge")


@pytest.fixture(scope="package")
def postgres(connected: Connected) -> Iterator[LocalPostgres]:
    """PostgreSQL started as kraftform's runtime starts it (logical decoding on, loopback, password logins), with an
    `orders` database whose `cdc` role (replication, owner of its tables) Debezium logs in as."""
    pg = LocalPostgres(os.environ[PG_PASSWORD_ENV]).up()
    try:
        pg.capture_database("orders", "cdc", "CREATE TABLE orders (id serial PRIMARY KEY, item text NOT NULL, "
                                             "qty int NOT NULL)")
        yield pg
    finally:
        pg.down()
