"""Host layouts: every node on exactly one host, endpoints that are safe to use, and no host whose loss stops the
quorum or a topic's writes; each refusal names the host and gives the numbers."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftform.declared import load_specs
from kraftform.errors import SpecError
from kraftform.spark.settings import master_url
from kraftform.specset.hosts import (
    host_losses,
    laid_out_nodes,
    layout,
    moved_addresses,
    replicas_on_host,
    spark_hosts,
    unsafe_shared_dir,
)
from kraftform.specset.model import ClusterSpec, Host

from ...conftest import SpecsCopy, edit

THREE_HOSTS = """\
  hosts:
    - {name: host-a, docker: "unix:///run/a/docker.sock", address: 10.0.0.1, racks: [rack-a]}
    - {name: host-b, docker: "ssh://ops@10.0.0.2", address: 10.0.0.2, racks: [rack-b]}
    - {name: host-c, docker: "unix:///run/c/docker.sock", address: 10.0.0.3, racks: [rack-c]}
"""


def with_hosts(specs: Path, hosts: str = THREE_HOSTS) -> Path:
    edit(specs / "cluster.yaml", "      host: localhost\n", "")
    edit(specs / "cluster.yaml", "  storage_per_broker: 4TiB\n", "  storage_per_broker: 4TiB\n" + hosts)
    return specs


def problems(specs: Path) -> list[str]:
    with pytest.raises(SpecError) as caught:
        load_specs(specs)
    return [p.message for p in caught.value.problems]


def test_three_hosts_a_rack_each_put_one_controller_and_one_broker_on_each(specs_copy: SpecsCopy) -> None:
    specs = load_specs(with_hosts(specs_copy()))
    assert layout(specs.cluster) == {"host-a": ("platform-controller-0", "platform-broker-0"),
                                     "host-b": ("platform-controller-1", "platform-broker-1"),
                                     "host-c": ("platform-controller-2", "platform-broker-2")}
    losses = host_losses(specs)
    assert all(loss.survived for loss in losses)
    assert {(t.replicas_left, t.min_insync) for loss in losses for t in loss.topics} == {(2, 2)}


def test_two_racks_on_one_host_refused_with_the_voters_and_replicas_left(specs_copy: SpecsCopy) -> None:
    specs = with_hosts(specs_copy(), """\
  hosts:
    - {name: host-a, docker: "unix:///run/a/docker.sock", address: 10.0.0.1, racks: [rack-a, rack-b]}
    - {name: host-c, docker: "unix:///run/c/docker.sock", address: 10.0.0.3, racks: [rack-c]}
""")
    found = problems(specs)
    assert ("host 'host-a': it runs 2 of the 3 controllers: 1 would be left, under the majority of 2, and "
                        "the cluster would stop (spread the nodes over more hosts, or set host_failures_tolerated: 0 "
                        "to accept it)") in found
    assert ("host 'host-a': 17 topic(s) would keep 1 of their 3 replicas of a partition (2 on this host), under "
            "min.insync.replicas 2, and refuse acks=all writes: '<cluster defaults>', 'clickstream.page-views.v1', "
            "'clickstream.searches.v1' and 14 more (spread the nodes over more hosts, or set host_failures_tolerated: "
            "0 to accept it)") in found
    assert not any("host-c" in p for p in found)


def test_a_layout_one_host_breaks_is_accepted_when_no_host_failure_is_tolerated(specs_copy: SpecsCopy) -> None:
    specs = with_hosts(specs_copy(), """\
  host_failures_tolerated: 0
  hosts:
    - {name: lab, docker: "unix:///var/run/docker.sock", address: 10.0.0.1, racks: [rack-a, rack-b, rack-c]}
""")
    loaded = load_specs(specs)
    (loss,) = host_losses(loaded)
    assert (loss.voters_lost, loss.quorum_alive, len(loss.unwritable)) == (3, False, len(loss.topics))


def test_nodes_placed_nowhere_twice_or_unknown_and_unsafe_endpoints(specs_copy: SpecsCopy) -> None:
    specs = with_hosts(specs_copy(), """\
  hosts:
    - {name: host-a, docker: "tcp://10.0.0.1:2376", address: 10.0.0.1, racks: [rack-a, rack-z], nodes: [7]}
    - {name: host-b, docker: "ssh://ops@10.0.0.2", address: 10.0.0.1, racks: [rack-a],
       tls: {ca: ca.pem, cert: c.pem, key: k.pem}}
    - {name: host-b, docker: "unix:///run/b.sock", address: 10.0.0.3, nodes: [1001, 1003]}
""")
    found = problems(specs)
    assert "duplicate host name 'host-b' (first declared at" in " ".join(found)
    assert "duplicate host address '10.0.0.1' (first declared at" in " ".join(found)
    assert set(found) >= {
        "host 'host-a': tcp://10.0.0.1:2376 without tls: the Docker API over TCP is root on the host for anyone who "
        "reaches the port; give tls: {ca, cert, key} (the engine started with --tlsverify), or use ssh://",
        "host 'host-a': rack 'rack-z' is not one of cluster.racks (rack-a, rack-b, rack-c)",
        "host 'host-a': node id 7 is not a node of cluster 'platform' (brokers 1..3, controllers 1001..1003)",
        "host 'host-b': tls is for a tcp:// endpoint, not ssh://",
        "host 'host-b': rack 'rack-a' is already on host 'host-a'",
        "hosts: no host runs platform-controller-1, platform-broker-1, platform-broker-2: give every rack of "
        "cluster.racks a host, or name the node ids under a host's `nodes`",
        "host 'host-b' runs no node: name its racks or node ids, or remove it",
    }


def test_the_external_listener_host_is_refused_beside_hosts(specs_copy: SpecsCopy) -> None:
    specs = specs_copy()
    edit(specs / "cluster.yaml", "  storage_per_broker: 4TiB\n", "  storage_per_broker: 4TiB\n" + THREE_HOSTS)
    assert problems(specs) == ["with hosts, each broker is reached at its host's address; remove "
                               "external_listener.host"]


def test_a_node_id_wins_over_its_rack_and_tls_paths_are_from_the_spec_file(specs_copy: SpecsCopy) -> None:
    specs = load_specs(with_hosts(specs_copy(), """\
  host_failures_tolerated: 0
  hosts:
    - {name: host-a, docker: "tcp://10.0.0.1:2376", address: 10.0.0.1, racks: [rack-a], nodes: [1002],
       tls: {ca: certs/ca.pem, cert: certs/cert.pem, key: /etc/key.pem}}
    - {name: host-b, docker: "ssh://ops@10.0.0.2:2222", address: 10.0.0.2, racks: [rack-b]}
    - {name: host-c, docker: "unix:///run/c/docker.sock", address: 10.0.0.3, racks: [rack-c], nodes: [1001]}
"""))
    assert layout(specs.cluster) == {"host-a": ("platform-controller-1", "platform-broker-0"),
                                     "host-b": ("platform-broker-1",),
                                     "host-c": ("platform-controller-0", "platform-controller-2", "platform-broker-2")}
    tls = specs.cluster.hosts[0].tls
    assert tls is not None
    assert (tls.ca, tls.key) == (str(Path(specs.cluster.location.file).parent / "certs/ca.pem"), "/etc/key.pem")


def test_tls_paths_are_absolute_when_the_specs_are_named_from_their_parent(
        specs_copy: SpecsCopy, monkeypatch: pytest.MonkeyPatch) -> None:
    """The records keep them: a command given only the state directory, run from elsewhere, finds the files."""
    specs = with_hosts(specs_copy(), """\
  hosts:
    - {name: host-a, docker: "tcp://10.0.0.1:2376", address: 10.0.0.1, racks: [rack-a],
       tls: {ca: certs/ca.pem, cert: certs/cert.pem, key: certs/key.pem}}
    - {name: host-b, docker: "ssh://ops@10.0.0.2:2222", address: 10.0.0.2, racks: [rack-b]}
    - {name: host-c, docker: "unix:///run/c/docker.sock", address: 10.0.0.3, racks: [rack-c]}
""")
    monkeypatch.chdir(specs.parent)
    tls = load_specs(Path(specs.name)).cluster.hosts[0].tls
    assert tls is not None
    assert tls.ca == str(specs.resolve() / "certs" / "ca.pem") and Path(tls.ca).is_absolute()


@settings(max_examples=200, deadline=None)
@given(brokers=st.integers(1, 12), racks=st.integers(0, 4), rf=st.integers(1, 5), on_host=st.data())
def test_replicas_on_a_host_never_exceed_what_its_racks_and_brokers_can_hold(
        brokers: int, racks: int, rf: int, on_host: st.DataObject) -> None:
    names = tuple(f"r{i}" for i in range(min(racks, brokers)))
    mine = on_host.draw(st.lists(st.sampled_from(names), unique=True)) if names else []
    ids = () if names else tuple(on_host.draw(st.lists(st.integers(1, brokers), unique=True)))
    cluster = ClusterSpec("c", brokers, "4.4.0", racks=names, hosts=(Host("h", "unix:///s", "1.2.3.4",
                                                                              tuple(mine), ids),))
    brokers_here = [n for n in laid_out_nodes(cluster) if n.broker and (n.rack in mine or n.node_id in ids)]
    held = replicas_on_host(cluster, cluster.hosts[0], rf)
    assert held <= min(rf, len(brokers_here))
    if names and len(mine) == len(names):  # every rack here: every replica here
        assert held == min(rf, brokers)
    if not names:
        assert held == min(rf, len(ids))


def test_spark_on_hosts_a_worker_on_each_spark_host_the_master_on_the_first(specs_copy: SpecsCopy) -> None:
    specs = with_hosts(specs_copy(), THREE_HOSTS + """\
  spark: {master: standalone, hosts: [host-b, host-c], shared_dir: /mnt/kraftform, worker_cores: 1}
""")
    cluster = load_specs(specs).cluster
    assert [h.name for h in spark_hosts(cluster)] == ["host-b", "host-c"]
    assert cluster.spark.workers == 2  # one per Spark host
    assert master_url(cluster, 2) == "spark://10.0.0.2:7077"
    edit(specs / "cluster.yaml", "hosts: [host-b, host-c], ", "")
    everywhere = load_specs(specs).cluster
    assert [h.name for h in spark_hosts(everywhere)] == ["host-a", "host-b", "host-c"]
    assert everywhere.spark.workers == 3


def test_spark_on_hosts_refused_without_a_shared_dir_with_a_worker_count_or_naming_no_host(
        specs_copy: SpecsCopy) -> None:
    specs = with_hosts(specs_copy(), THREE_HOSTS + """\
  spark: {master: standalone, workers: 4, hosts: [host-b, host-z]}
""")
    found = problems(specs)
    assert ("on cluster.hosts, a worker runs on each of spark.hosts (every host when unset); remove spark.workers"
            in found)
    assert "no host 'host-z' in cluster.hosts (host-a, host-b, host-c)" in found
    assert any(p.startswith("a standalone Spark on cluster.hosts needs spark.shared_dir") for p in found), found
    # Without hosts, the host-only fields are refused, not ignored.
    alone = specs_copy("alone")
    edit(alone / "cluster.yaml", "  storage_per_broker: 4TiB\n",
         "  storage_per_broker: 4TiB\n  spark: {master: standalone, hosts: [a], shared_dir: /mnt/x}\n")
    assert sorted(problems(alone)) == [
        "spark.hosts places Spark on cluster.hosts, and this cluster has none",
        "spark.shared_dir places Spark on cluster.hosts, and this cluster has none"]


@pytest.mark.parametrize(("path", "why"), [
    ("/etc", "in the host's system directory /etc"),
    ("/etc/kraftform", "in the host's system directory /etc"),
    ("/usr/local/share", "in the host's system directory /usr"),
    ("/var/lib/docker/volumes/x", "in the host's system directory /var/lib/docker"),
    ("/", "holds other users' or services' files"),
    ("/home/", "holds other users' or services' files"),
    ("/srv/../etc", "must be a plain absolute path"),
    ("/srv//kraftform", "must be a plain absolute path"),
])
def test_a_shared_dir_in_a_hosts_system_directories_or_shared_by_others_is_refused(path: str, why: str) -> None:
    refused = unsafe_shared_dir(path)
    assert refused is not None and why in refused, refused


@pytest.mark.parametrize("path", ["/srv/kraftform", "/mnt/nfs/spark", "/tmp/pytest-of-root/hosts0/shared",
                                  "/etcetera/x", "/var/lib/kraftform"])
def test_a_directory_of_its_own_is_a_shared_dir(path: str) -> None:
    assert unsafe_shared_dir(path) is None


def test_validate_refuses_a_shared_dir_of_etc_at_its_line(specs_copy: SpecsCopy) -> None:
    specs = with_hosts(specs_copy(), THREE_HOSTS + """\
  spark: {master: standalone, shared_dir: /etc, worker_cores: 1}
""")
    found = problems(specs)
    assert any(p.startswith("spark.shared_dir '/etc' is in the host's system directory /etc") for p in found), found


def test_two_hosts_on_one_engine_or_one_address_are_refused(specs_copy: SpecsCopy) -> None:
    specs = with_hosts(specs_copy(), THREE_HOSTS.replace('"unix:///run/c/docker.sock", address: 10.0.0.3',
                                                         '"unix:///run/a/docker.sock", address: 10.0.0.2'))
    found = sorted(problem.split(" (first declared at ")[0] for problem in problems(specs))
    assert found == ["duplicate host Docker endpoint 'unix:///run/a/docker.sock'", "duplicate host address '10.0.0.2'"]


def test_a_disabled_external_listener_is_refused_on_hosts_not_ignored(specs_copy: SpecsCopy) -> None:
    specs = with_hosts(specs_copy())
    edit(specs / "cluster.yaml", "      enabled: true\n", "      enabled: false\n")
    assert problems(specs) == [
        "with hosts, every broker's client listener is at its host's address from base_port (clients and the other "
        "hosts reach it there): it cannot be disabled; remove external_listener.enabled"]


def test_the_spark_master_and_connect_workers_may_not_take_a_nodes_port_on_a_host(specs_copy: SpecsCopy) -> None:
    """Brokers listen from base_port (clients), +100 (between brokers), +200 (controllers), +300 and +400 (metrics):
    the standalone master's 7077 on the first Spark host and the Connect workers' REST ports (on any host) must
    not be one of them."""
    specs = with_hosts(specs_copy(), THREE_HOSTS + "  spark: {master: standalone, shared_dir: /mnt/kraftform}\n")
    edit(specs / "cluster.yaml", "      base_port: 19092\n", "      base_port: 7077\n")
    (specs / "connect.yaml").write_text("""\
users:
  - {name: orders-connect, password: {env: KRAFTFORM_PASSWORD_ORDERS_CONNECT}}
  - {name: audit-connect, password: {env: KRAFTFORM_PASSWORD_AUDIT_CONNECT}}
connect:
  - {name: orders-connect, user: orders-connect, workers: 1, rest_port: 7378}
  - {name: audit-connect, user: audit-connect, workers: 1, rest_port: 7379}
""")
    found = problems(specs)
    assert found == [
        "spark: the standalone master listens on 7077 of host 'host-a', which is platform-broker-0's CLIENT port: "
        "move security.external_listener.base_port",
        "connect 'orders-connect': worker 0's REST port 7378 is platform-broker-0's metrics port on host 'host-a'; "
        "choose another rest_port",
        "connect 'audit-connect': worker 0's REST port 7379 is platform-broker-1's metrics port on host 'host-b'; "
        "choose another rest_port"]
    edit(specs / "cluster.yaml", "      base_port: 7077\n", "      base_port: 19092\n")
    assert load_specs(specs).connect


def test_a_running_hosts_new_address_is_refused_naming_both_addresses(specs_copy: SpecsCopy) -> None:
    """Its nodes' certificates and the voters name the recorded address: a roll onto the new one would fail TLS."""
    cluster = load_specs(with_hosts(specs_copy())).cluster
    recorded = {"host-a": "10.0.0.1", "host-b": "10.0.0.9", "host-c": "10.0.0.8"}
    [why] = moved_addresses(cluster, recorded, ["host-a", "host-b"])  # host c runs no node: its move is free
    assert why.startswith("host 'host-b': its address changed from 10.0.0.9 to 10.0.0.2, but its nodes' "
                          "certificates, listeners and the quorum's voters name 10.0.0.9")
    assert moved_addresses(cluster, {"host-a": "10.0.0.1"}, ["host-a", "host-b"]) == ()  # unrecorded: nothing to say
