from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from kraftform.errors import UsageError
from kraftform.runtime import deployment as dep


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
