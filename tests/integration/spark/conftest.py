"""The example pipelines against the shared secure cluster, with real Spark and the real Kafka connector.

Each test gets its own copy of an example consumer (the same value schema, watermark and SQL as
specs/consumers.yaml) on topics under its own prefix, logging in as its own SCRAM user; tests that run the
job in this process share one Spark session (one JVM per test run), and tests that must kill the job run
`kraftform consumers run` as users do, in a process of its own.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import Consumer

from kraftform.cluster.connection import Connection
from kraftform.kafka.clients import produce_paced
from kraftform.spark.checkpoint import prepare
from kraftform.spark.job import placement, run_until_stopped, spark_session, start_query
from kraftform.spark.settings import job_settings
from kraftform.specset.model import ConsumerSpec, SpecSet

from ...conftest import EXAMPLE_SPECS, REPO
from ..conftest import LiveCluster, unique
from ..kafka.conftest import Workspace

EXAMPLES = {c["name"]: c for c in yaml.safe_load((EXAMPLE_SPECS / "consumers.yaml").read_text())["consumers"]}


@dataclass
class Pipeline:
    """One example consumer, renamed into a test's own topics and user."""

    workspace: Workspace
    name: str
    data_dir: Path
    password: str
    inputs: list[str]
    sink_topic: str | None

    @property
    def specs(self) -> SpecSet:
        return self.workspace.specs()

    @property
    def consumer(self) -> ConsumerSpec:
        return next(c for c in self.specs.consumers if c.name == self.name)

    @property
    def user(self) -> str:
        return self.consumer.user

    @property
    def as_user(self) -> Connection:
        admin = self.workspace.connection
        return Connection(admin.bootstrap, "SASL_SSL", "SCRAM-SHA-512", self.user, self.password, admin.ca_path)

    def produce(self, records: Iterable[tuple[str, str | None, dict[str, Any]]]) -> int:
        """(topic, key, value) records, produced as the admin, acknowledged by all in-sync replicas."""
        return produce_paced(self.workspace.connection, ((t, k, json.dumps(v)) for t, k, v in records),
                             rate=1e9, count=None, settings={"acks": "all", "linger.ms": 20})

    def run_here(self, spark: Any, available_now: bool = True, log: Callable[[str], None] = print) -> None:
        """The job in this process, in the shared session, until it has processed what the topics hold."""
        consumer, specs = self.consumer, self.specs
        settings = job_settings(consumer, specs)
        where = placement(consumer, self.data_dir)
        meta = prepare(where.checkpoint, consumer, settings.facts, allow_reset=False)
        query = start_query(spark, consumer, settings, self.as_user, where, meta, log, available_now)
        run_until_stopped(query, consumer, log, lambda: False)

    def cli(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(self.command(*args), capture_output=True, text=True, check=False, timeout=timeout,
                              env=self.env)

    def command(self, verb: str, *args: str) -> list[str]:
        """`kraftform consumers VERB [NAME] SPECS --command-config ... [--data-dir ...] [options]`."""
        named = [args[0]] if args and not args[0].startswith("-") else []
        options = args[len(named):]
        return [sys.executable, "-m", "kraftform", "consumers", verb, *named, str(self.workspace.root),
                "--command-config", str(self.workspace.command_config),
                *(["--data-dir", str(self.data_dir)] if verb in ("run", "status") else []), *options]

    @property
    def env(self) -> dict[str, str]:
        return {**os.environ, "PYTHONUNBUFFERED": "1"}

    def start(self, *args: str) -> subprocess.Popen[str]:
        """`kraftform consumers run` in a process group of its own, so a SIGKILL takes its JVM down too."""
        return subprocess.Popen(self.command("run", self.name, *args), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, env=self.env, start_new_session=True)

    def read_sink(self, isolation: str = "read_committed", idle_s: float = 5.0) -> list[tuple[bytes | None, bytes]]:
        """Every record of the sink topic, as a reader with `isolation` sees it."""
        assert self.sink_topic is not None
        consumer = Consumer({**self.workspace.connection.librdkafka(), "group.id": unique("reader"),
                             "auto.offset.reset": "earliest", "enable.auto.commit": False,
                             "isolation.level": isolation})
        consumer.subscribe([self.sink_topic])
        out: list[tuple[bytes | None, bytes]] = []
        quiet_since = time.monotonic()
        try:
            while time.monotonic() - quiet_since < idle_s:
                message = consumer.poll(0.5)
                if message is None or message.error() or message.value() is None:
                    continue
                out.append((message.key(), message.value() or b""))
                quiet_since = time.monotonic()
        finally:
            consumer.close()
        return out


def files_holding(root: Path, secret: str) -> list[str]:
    """Files under `root` whose bytes contain `secret`."""
    return [str(p) for p in root.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]


def kill_group(process: subprocess.Popen[str]) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=30)


def wait_for_line(process: subprocess.Popen[str], marker: str, timeout: float, seen: list[str]) -> str:
    """Read the job's output until a line contains `marker`; every line read is kept in `seen`."""
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            raise AssertionError(f"the job ended before {marker!r}:\n" + "".join(seen[-40:]))
        seen.append(line)
        if marker in line:
            return line
    raise AssertionError(f"no {marker!r} within {timeout} s:\n" + "".join(seen[-40:]))


def example_pipeline(workspace: Workspace, tmp_path: Path, example: str, partitions: int = 3,
                     **overrides: Any) -> Pipeline:
    """Write a spec directory running `example` from specs/consumers.yaml under the workspace's prefix."""
    base = {**EXAMPLES[example], **overrides}
    user = workspace.name("job").replace(".", "-")
    inputs = [workspace.name(f"in{i}") for i in range(len(base["topics"]))]
    sink = dict(base["sink"])
    sink_topic = workspace.name("out") if sink["type"] == "kafka" else None
    if sink_topic:
        sink["topic"] = sink_topic
    secret = tmp_path / "password"
    password = f"pw-{unique('x')}"
    secret.write_text(password)
    consumer = {**base, "topics": inputs, "user": user, "sink": sink, "group_id_prefix": workspace.prefix}
    acls = [{"principal": f"User:{user}", "resource": {"type": "topic", "name": t}, "operations": ["read", "describe"]}
            for t in inputs]
    acls.append({"principal": f"User:{user}", "resource": {"type": "group", "name": workspace.prefix,
                                                           "pattern": "prefixed"}, "operations": ["read"]})
    if sink_topic:
        acls += [{"principal": f"User:{user}", "resource": {"type": "topic", "name": sink_topic},
                  "operations": ["write", "describe"]},
                 {"principal": f"User:{user}", "operations": ["write", "describe"],
                  "resource": {"type": "transactional_id", "name": workspace.prefix, "pattern": "prefixed"}}]
    topics = [{"name": t, "partitions": partitions, "replication_factor": 3} for t in inputs]
    topics += [{"name": sink_topic, "partitions": partitions, "replication_factor": 3}] if sink_topic else []
    workspace.write(topics=topics, acls=acls, users=[{"name": user, "password": {"file": str(secret)}}],
                    consumers=[consumer])
    workspace.apply()
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    return Pipeline(workspace, example, data_dir, password, inputs, sink_topic)


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One local[2] Spark session (one JVM) for the whole test run; each job gets a session of its own on it."""
    from kraftform.declared import load_specs

    specs = load_specs(EXAMPLE_SPECS)
    session = spark_session(job_settings(specs.consumers[0], specs), tmp_path_factory.mktemp("spark"))
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def pipelines(local_cluster: LiveCluster, tmp_path: Path) -> Callable[..., Pipeline]:
    def make(example: str, **overrides: Any) -> Pipeline:
        root = tmp_path / "specs"
        root.mkdir(exist_ok=True)
        return example_pipeline(Workspace(local_cluster, root, unique("sp")), tmp_path, example, **overrides)

    return make


__all__ = ["REPO", "Pipeline", "files_holding", "kill_group", "wait_for_line"]
