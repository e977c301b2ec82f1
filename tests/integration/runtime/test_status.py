"""`kraftform status` on the session's shared clusters, both runtimes: what a probe sees of a healthy cluster,
reached only through a client config (as for a cluster kraftform did not start), and the errors it must give
within seconds; and the nodes' metrics endpoints where the Docker runtime wrote them."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from kraftform.runtime.nodes.deployment import write_private

from ..conftest import CLUSTER_SPECS, LiveCluster

#: What "within seconds" means on a loaded 2-core machine: the clients' own bounds (10 s) and a Python start; a
#: status that hangs on its clients' defaults takes minutes. Its speed alone is benchmarked, not asserted.
BOUND_S = 60


def _status(*args: str) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "kraftform", "status", str(CLUSTER_SPECS), *args],
                          capture_output=True, text=True, timeout=120, check=False)
    return done, time.monotonic() - started


def test_every_node_serves_its_metrics_where_the_runtime_wrote_it(docker_cluster: LiveCluster) -> None:
    """Docker's: a local test cluster's nodes serve none (`quick_start`), and test_monitoring checks those of a
    local cluster started as `cluster up` starts it."""
    endpoints = json.loads((docker_cluster.state_dir / "metrics.json").read_text())
    assert len(endpoints) == 6
    for endpoint in endpoints:
        assert endpoint["address"].startswith("127."), endpoint  # loopback only, whatever the runtime
        with urllib.request.urlopen(f"http://{endpoint['address']}/metrics", timeout=10) as response:
            text = response.read().decode()
        if "broker" in endpoint["roles"]:
            assert "\nkafka_server_under_replicated_partitions 0.0" in text, text[:1000]
        else:
            assert "\nkafka_controller_offline_partitions 0.0" in text, text[:1000]
        assert "\nkafka_raft_current_leader 100" in text  # every node knows the controller quorum's leader


def test_status_of_a_healthy_cluster_through_its_client_config_alone(cluster: LiveCluster) -> None:
    done, _ = _status("--command-config", str(cluster.state_dir / "admin.properties"), "--format", "json")
    assert done.returncode == 0, done.stdout + done.stderr
    status = json.loads(done.stdout)
    assert status["healthy"] and status["brokers"] == [1, 2, 3] and status["controllers"] == [1001, 1002, 1003]
    assert status["quorum_leader"] in (1001, 1002, 1003)


def test_a_wrong_password_and_an_unreachable_cluster_are_errors_within_seconds(cluster: LiveCluster,
                                                                                tmp_path: Path) -> None:
    config = (cluster.state_dir / "admin.properties").read_text()
    password = cluster.connection.password
    assert password
    wrong = tmp_path / "wrong.properties"
    write_private(wrong, config.replace(password, "not-the-password"))
    done, took = _status("--command-config", str(wrong))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert "authentication" in done.stderr.lower(), done.stderr
    assert took < BOUND_S, took
    nowhere = tmp_path / "nowhere.properties"
    write_private(nowhere, config.replace(cluster.connection.bootstrap, "127.0.0.1:1"))
    done, took = _status("--command-config", str(nowhere))
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert "127.0.0.1:1" in done.stderr, done.stderr
    assert took < BOUND_S, took
