"""No password on a command line: every local user can read every process's (`ps`, /proc/PID/cmdline, container
processes included, seen from the host), and `docker inspect` shows a container's command and environment. Every
command line is sampled while a cluster is made (its nodes formatted with the admin's SCRAM credential, started,
the specs' users created) and searched for the run's passwords afterwards. The same sampler watches a roll and a
broker added (test_day2), `connect up` (test_connect), `postgres up` (test_postgres) and a consumer run
(test_lifecycle)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kraftform.runtime.deployment import admin_config
from kraftform.testing.cluster import ephemeral_cluster

from ..conftest import CLUSTER_SPECS

pytestmark = pytest.mark.integration


@contextmanager
def command_lines(interval: float = 0.01) -> Iterator[set[bytes]]:
    """Every distinct command line of every process, sampled every `interval` seconds while the block runs (10 ms
    catches a format tool's or psql's few hundred milliseconds; a JVM's line lasts its life)."""
    seen: set[bytes] = set()
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            for proc in Path("/proc").glob("[0-9]*"):
                try:
                    seen.add((proc / "cmdline").read_bytes())
                except OSError:
                    continue
            stop.wait(interval)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield seen
    finally:
        stop.set()
        sampler.join(10)


@pytest.mark.parametrize("runtime", ["local", "docker"])
def test_making_a_cluster_puts_no_password_on_a_command_line_nor_in_docker_inspect(runtime: str,
                                                                                  tmp_path: Path) -> None:
    with command_lines() as seen, ephemeral_cluster(CLUSTER_SPECS, "fast", runtime, base_dir=tmp_path) as cluster:
        secrets = {"the admin's": admin_config(cluster.state_dir).password,
                   **{f"{user}'s": pw for user, pw in cluster.passwords.items()}}
        inspected = ""
        if runtime == "docker":
            from kraftform.runtime.engine import docker_client

            client = docker_client()
            inspected = json.dumps([c.attrs for c in client.containers.list(
                filters={"label": f"dev.kraftform.cluster={cluster.name}"})])
            assert inspected != "[]"
    formats = [line for line in seen if b"StorageTool" in line and b"format" in line]
    assert formats, "no format's command line was sampled: the check would prove nothing"
    assert any(b"kafka.Kafka" in line for line in seen)
    found = [who for who, secret in secrets.items() if secret and any(secret.encode() in line for line in seen)]
    assert found == [], f"on a command line: {found} password"
    assert [who for who, secret in secrets.items() if secret and secret in inspected] == []
