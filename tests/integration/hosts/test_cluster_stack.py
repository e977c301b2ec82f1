"""A stack's nodes on the harness's hosts as `pulumi up` changes them: the secrets and `ClusterNodes` providers in
Pulumi's provider host, driven over gRPC with values as the engine sends them, each node on its host's Docker
engine (combined nodes: a small stack starts fast). Made (a second `up` changes nothing), a host added with its
broker (the update puts it on that host's engine and moves replicas onto it) and taken out again (drained, its
node removed from the host the specs no longer name), then destroyed: nothing left on any host.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from pulumi.runtime import proto

from kraftform.cluster.connection import Connection
from kraftform.cluster.containers import LABEL_HOST, client_bootstrap, container_specs, in_containers
from kraftform.cluster.render import secrets_from_dict
from kraftform.cluster.topology import topology
from kraftform.pulumi.nodes import ClusterNodesProvider
from kraftform.specset.model import ClusterSpec, DockerTls, ExternalListener, Host

from ...conftest import REPO
from ..pulumi.engine import ProviderHost
from ..pulumi.test_cluster_nodes import Stack, spec_of, stack_up
from . import harness

pytestmark = [pytest.mark.integration, pytest.mark.hosts]

NAME = "kfstackh"


def _hosts(hosts: list[harness.Host]) -> tuple[Host, ...]:
    """Each host by its engine's socket, host c by its TCP endpoint with the harness's client certificate."""
    tls = DockerTls(*(str(p) for p in harness.CLIENT_TLS))
    return tuple(Host(h.name, h.tcp_endpoint, h.address, (f"rack-{h.name}",), tls=tls) if h.name == "c"
                 else Host(h.name, h.docker_host, h.address, (f"rack-{h.name}",)) for h in hosts)


def on(hosts: list[harness.Host], **fields: Any) -> ClusterSpec:
    base = spec_of(**fields)
    listener = ExternalListener(True, base_port=39092)
    return dataclasses.replace(base, name=NAME, racks=tuple(f"rack-{h.name}" for h in hosts), hosts=_hosts(hosts),
                               security=dataclasses.replace(base.security, external_listener=listener))


def admin(stack: Stack) -> AdminClient:
    made = secrets_from_dict(stack.secrets)
    ca = stack.host.tmpdir.parent / "hosts-stack-ca.pem"
    ca.write_text(made.ca.cert_pem)
    spec = in_containers(stack.spec)
    topo = topology(spec)
    bootstrap = client_bootstrap(topo, container_specs(topo, made))
    return AdminClient(Connection.scram(bootstrap, spec.security.admin_user, made.admin_password,
                                        spec.security.sasl_mechanism, str(ca)).librdkafka())


def _containers(host: harness.Host) -> set[str]:
    out = host.docker("ps", "--filter", f"label=dev.kraftform.cluster={NAME}", "--format",
                      f'{{{{.Names}}}}@{{{{.Label "{LABEL_HOST}"}}}}').stdout
    return set(out.split())


@pytest.fixture(scope="module")
def hosts_stack(four_hosts: list[harness.Host], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    host = ProviderHost(REPO, tmp_path_factory.mktemp("hosts-stack-tmp"))
    try:
        with stack_up(host, on(four_hosts[:3], mode="combined", brokers=3, controllers=3)) as made:
            yield made
    finally:
        host.close()


def test_a_first_up_puts_each_node_on_its_host_and_a_second_changes_nothing(
        hosts_stack: Stack, four_hosts: list[harness.Host]) -> None:
    for i, host in enumerate(four_hosts[:3]):
        assert _containers(host) == {f"{NAME}-node-{i}@{host.name}"}
    client = admin(hosts_stack)
    assert sorted(f"{b.host}:{b.port}" for b in client.list_topics(timeout=10).brokers.values()) == [
        "10.231.0.1:39092", "10.231.0.2:39093", "10.231.0.3:39094"]
    client.create_topics([NewTopic("stack.hosts", 8, 2)])["stack.hosts"].result(30)
    assert hosts_stack.up(hosts_stack.spec).changes == proto.DiffResponse.DIFF_NONE


def test_a_host_added_to_the_stack_gets_its_broker_there_and_taken_out_is_drained_then_destroy_leaves_nothing(
        hosts_stack: Stack, four_hosts: list[harness.Host]) -> None:
    diff = hosts_stack.up(on(four_hosts, mode="combined", brokers=4, controllers=3))
    assert diff.changes == proto.DiffResponse.DIFF_SOME
    assert _containers(four_hosts[3]) == {f"{NAME}-node-3@d"}
    topic = admin(hosts_stack).list_topics(timeout=10).topics["stack.hosts"]
    assert any(4 in p.replicas for p in topic.partitions.values())
    assert hosts_stack.up(hosts_stack.spec).changes == proto.DiffResponse.DIFF_NONE
    # Taken out of the specs again: the update finds its node on the host the specs no longer name, drains it and
    # removes its container and volume there.
    assert hosts_stack.up(on(four_hosts[:3], mode="combined", brokers=3, controllers=3)).changes == \
        proto.DiffResponse.DIFF_SOME
    assert _containers(four_hosts[3]) == set() and four_hosts[3].docker("volume", "ls", "-q").stdout.strip() == ""
    topic = admin(hosts_stack).list_topics(timeout=10).topics["stack.hosts"]
    assert not any(4 in p.replicas for p in topic.partitions.values())
    hosts_stack.host.delete(ClusterNodesProvider(), "nodes", hosts_stack.nodes_id, hosts_stack.nodes)
    hosts_stack.nodes_id = ""
    for host in four_hosts:
        assert _containers(host) == set() and host.docker("volume", "ls", "-q").stdout.strip() == ""
