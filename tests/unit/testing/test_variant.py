"""What a test cluster runs of the production specs: pure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kraftform.cluster.topology import topology
from kraftform.declared import load_specs
from kraftform.testing.cluster import OWNER_FILE, _owner_alive, _started_at
from kraftform.testing.variant import for_tests, password_variable

from ...conftest import EXAMPLE_SPECS

SPECS = load_specs(EXAMPLE_SPECS)


def test_faithful_keeps_the_cluster_section_under_a_name_of_its_own() -> None:
    made = for_tests(SPECS, "faithful", "t1-ab12")
    assert made.cluster.name == "t1-ab12"
    assert (made.cluster.brokers, made.cluster.controllers, made.cluster.racks, made.cluster.mode) == (
        SPECS.cluster.brokers, SPECS.cluster.controllers, SPECS.cluster.racks, SPECS.cluster.mode)
    assert made.topics == SPECS.topics and made.acls == SPECS.acls and made.quotas == SPECS.quotas
    assert all(n.name.startswith("t1-ab12-") for n in topology(made.cluster).nodes)
    assert made.cluster.quick_start and not SPECS.cluster.quick_start


def test_fast_is_one_combined_node_with_replication_capped_and_security_kept() -> None:
    made = for_tests(SPECS, "fast", "t1-ab12")
    nodes = topology(made.cluster).nodes
    assert len(nodes) == 1 and set(nodes[0].roles) == {"broker", "controller"}
    assert made.cluster.security == SPECS.cluster.security
    assert all(t.replication_factor == 1 for t in made.topics)
    assert all(int(t.config.get("min.insync.replicas", "1")) == 1 for t in made.topics)
    assert [t.partitions for t in made.topics] == [t.partitions for t in SPECS.topics]
    assert made.acls == SPECS.acls and made.consumers == SPECS.consumers


def test_users_read_passwords_the_test_cluster_sets_never_the_production_ones() -> None:
    made = for_tests(SPECS, "fast", "t1-ab12")
    assert [u.name for u in made.users] == [u.name for u in SPECS.users]
    assert {(u.password.source, u.password.name) for u in made.users} == {
        ("env", password_variable("t1-ab12", u.name)) for u in SPECS.users}


def test_per_node_settings_follow_the_nodes_new_names() -> None:
    import dataclasses

    cluster = dataclasses.replace(SPECS.cluster, node_config={"platform-broker-1": {"num.io.threads": "4"}})
    made = for_tests(dataclasses.replace(SPECS, cluster=cluster), "faithful", "t9-0000")
    assert made.cluster.node_config == {"t9-0000-broker-1": {"num.io.threads": "4"}}
    with pytest.raises(ValueError, match="unknown topology"):
        for_tests(SPECS, "tiny", "t9")  # type: ignore[arg-type]


def test_an_owner_is_alive_only_while_its_very_process_runs(tmp_path: Path) -> None:
    (tmp_path / OWNER_FILE).write_text(f"{os.getpid()} {_started_at(os.getpid())}\n")
    assert _owner_alive(tmp_path)
    (tmp_path / OWNER_FILE).write_text(f"{os.getpid()} 1\n")  # the same pid, another start: a recycled pid
    assert not _owner_alive(tmp_path)
    (tmp_path / OWNER_FILE).write_text("")
    assert not _owner_alive(tmp_path)
