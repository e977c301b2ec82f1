from __future__ import annotations

import dataclasses
import json
import stat
from pathlib import Path

import pytest

from kraftform.cluster.topology import topology
from kraftform.declared import load_specs
from kraftform.errors import UsageError
from kraftform.runtime.nodes import deployment as dep

from ....conftest import EXAMPLE_SPECS


def test_state_dir_is_reused_only_for_the_same_runtime_and_cluster(tmp_path: Path) -> None:
    assert dep.load_existing(tmp_path, "local", "a") is None
    dep.save(tmp_path, dep.Deployment("local", "a", "127.0.0.1:9092", 3, "4.3.1",
                                      [dep.NodeRecord("a-broker-0", 1, ["broker"], "123")]))
    again = dep.load_existing(tmp_path, "local", "a")
    assert again is not None and again.node("a-broker-0").handle == "123"
    for runtime, name in (("docker", "a"), ("local", "b")):
        with pytest.raises(UsageError, match="holds local cluster 'a'; use another --state-dir"):
            dep.load_existing(tmp_path, runtime, name)


def test_client_files_holding_the_password_are_private(tmp_path: Path) -> None:
    auth = dep.write_client_files(tmp_path / "s", "h:1", "admin", "pw-123", "SCRAM-SHA-512", "CA")
    for name in ("admin.properties", "admin.librdkafka.conf"):
        path = tmp_path / "s" / name
        assert stat.S_IMODE(path.stat().st_mode) == 0o600 and "pw-123" in path.read_text()
    assert dep.admin_config(tmp_path / "s").password == "pw-123"
    assert auth.ca_path == str((tmp_path / "s" / "ca.pem").resolve())


def test_node_heaps_survive_a_round_trip_and_old_state_files_still_load(tmp_path: Path) -> None:
    record = dep.NodeRecord("c-broker-0", 1, ["broker"], "123", heap_bytes=768 * 1024 * 1024)
    dep.save(tmp_path, dep.Deployment("local", "c", "127.0.0.1:9092", 1, "4.3.1", [record]))
    assert dep.load(tmp_path).node("c-broker-0").heap_bytes == 768 * 1024 * 1024
    state = json.loads((tmp_path / dep.STATE_FILE).read_text())
    del state["nodes"][0]["heap_bytes"]  # as written before heaps were recorded
    (tmp_path / dep.STATE_FILE).write_text(json.dumps(state))
    assert dep.load(tmp_path).node("c-broker-0").heap_bytes is None


def test_a_running_cluster_its_specs_no_longer_describe_is_named_not_started() -> None:
    """`brokers: 3 -> 4` on a running cluster: `cluster up` once waited its whole timeout for a fourth broker
    that nothing started."""
    cluster = load_specs(EXAMPLE_SPECS).cluster
    topo = topology(cluster)
    running = dep.Deployment("local", cluster.name, "b:1", cluster.brokers, cluster.kafka_version, [
        dep.NodeRecord(n.name, n.node_id, list(n.roles), heap_bytes=n.heap_bytes) for n in topo.nodes])
    assert dep.drift(running, topo) == []
    grown = topology(dataclasses.replace(cluster, brokers=4, broker_heap_bytes=cluster.broker_heap_bytes * 2,
                                         kafka_version="4.3.1"))
    found = dep.drift(running, grown)
    assert found[0] == f"kafka_version {cluster.kafka_version} -> 4.3.1"
    assert "nodes to add: platform-broker-3" in found
    assert any(f.startswith("platform-broker-0: heap ") for f in found)
    with pytest.raises(UsageError, match=r"differs from its specs: kafka_version .*kraftform apply --state-dir /s"):
        dep.require_as_declared(Path("/s"), running, grown, None)


def test_a_test_clusters_quick_start_carries_over_to_the_nodes_a_roll_starts_and_a_full_start_stays_full(
        tmp_path: Path) -> None:
    cluster = load_specs(EXAMPLE_SPECS).cluster
    assert dep.as_started(cluster, tmp_path / "none") is cluster  # no cluster there: the specs as they are
    quick = [dep.NodeRecord(f"q-broker-{i}", i, ["broker"], "1", quick_start=True) for i in range(2)]
    dep.save(tmp_path, dep.Deployment("local", "q", "127.0.0.1:9092", 2, "4.4.0", quick))
    assert dep.as_started(cluster, tmp_path).quick_start
    assert dep.as_started(cluster, tmp_path).brokers == cluster.brokers
    # One node started in full (a cluster `cluster up` made): the nodes a roll starts run in full too.
    dep.save(tmp_path, dep.Deployment("local", "q", "127.0.0.1:9092", 2, "4.4.0",
                                      [quick[0], dataclasses.replace(quick[1], quick_start=False)]))
    assert not dep.as_started(dataclasses.replace(cluster, quick_start=True), tmp_path).quick_start
