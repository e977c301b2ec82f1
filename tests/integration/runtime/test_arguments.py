"""No password on a command line: every local user can read every process's (`ps`, /proc/PID/cmdline, container
processes included, seen from the host), and `docker inspect` shows a container's command and environment. Every
command line is sampled while a cluster is made (its nodes formatted with the admin's SCRAM credential, started,
the specs' users created) and searched for the run's passwords afterwards. The same sampler (verify's secret
scan's, `verification.secretscan.CommandLineSampler`) watches a roll and a broker added (test_day2), `connect up`
(test_connect), `postgres up` (test_postgres) and a consumer run (test_lifecycle)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from kraftform.cluster.containers import CONFIG_DIR
from kraftform.runtime.nodes.deployment import admin_config
from kraftform.testing.cluster import ephemeral_cluster
from kraftform.verification.secretscan import CommandLineSampler

from ..conftest import CLUSTER_SPECS

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("runtime", ["local", "docker"])
def test_making_a_cluster_puts_no_password_on_a_command_line_nor_in_docker_inspect(runtime: str,
                                                                                  tmp_path: Path) -> None:
    # Every 10 ms: a format tool's few hundred milliseconds are caught; a JVM's line lasts its life.
    with CommandLineSampler(0.01) as sampler, ephemeral_cluster(CLUSTER_SPECS, "fast", runtime,
                                                                base_dir=tmp_path) as cluster:
        secrets = {"the admin's": admin_config(cluster.state_dir).password,
                   **{f"{user}'s": pw for user, pw in cluster.passwords.items()}}
        inspected = ""
        if runtime == "docker":
            from kraftform.runtime.engines.engine import docker_client

            client = docker_client()
            nodes = client.containers.list(filters={"label": f"dev.kraftform.cluster={cluster.name}"})
            inspected = json.dumps([c.attrs for c in nodes])
            assert inspected != "[]"
            # Once formatted, no node's files hold the admin's password (its format arguments are removed).
            password = admin_config(cluster.state_dir).password
            assert password
            for node in nodes:  # read out with Docker's archive API: a grep would put it on a command line
                stream, _ = node.get_archive(CONFIG_DIR)
                with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
                    files = [m for m in tar.getmembers() if m.isfile()]
                    held = [m.name for m in files if password.encode() in (tar.extractfile(m) or io.BytesIO()).read()]
                assert files and held == [], (node.name, held)
    seen = sampler.seen
    formats = [line for line in seen if "StorageTool" in line and "format" in line]
    assert formats, "no format's command line was sampled: the check would prove nothing"
    assert any("kafka.Kafka" in line for line in seen)
    found = [who for who, secret in secrets.items() if secret and any(secret in line for line in seen)]
    assert found == [], f"on a command line: {found} password"
    assert [who for who, secret in secrets.items() if secret and secret in inspected] == []
