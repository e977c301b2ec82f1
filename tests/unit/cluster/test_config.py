"""Broker configuration rendering: security invariants, and a snapshot a reviewer can read."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from kraftform.cluster.config import Addressing, NodePaths, properties_text, render_properties
from kraftform.cluster.containers import docker_addressing
from kraftform.cluster.topology import Topology, topology
from kraftform.declared import load_specs

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SNAPSHOTS = FIXTURES / "snapshots"


def _topo(controller_auth: str = "mtls") -> Topology:
    cluster = load_specs(FIXTURES / "cluster").cluster
    security = dataclasses.replace(cluster.security, controller_auth=controller_auth)  # type: ignore[arg-type]
    return topology(dataclasses.replace(cluster, security=security))


def _render(topo: Topology, addr: Addressing) -> dict[str, dict[str, str]]:
    return {n.name: render_properties(topo, n, addr, NodePaths("/etc/kraftform", "/var/lib/kafka/data"))
            for n in topo.nodes}


@pytest.mark.parametrize("auth", ["mtls", "plain"])
def test_no_plaintext_listener_and_deny_by_default(auth: str) -> None:
    topo = _topo(auth)
    for name, props in _render(topo, docker_addressing(topo)).items():
        protocols = dict(p.split(":") for p in props["listener.security.protocol.map"].split(","))
        assert "PLAINTEXT" not in protocols.values(), name
        assert all(v in ("SSL", "SASL_SSL") for v in protocols.values()), name
        assert protocols["CONTROLLER"] == ("SSL" if auth == "mtls" else "SASL_SSL")
        assert props["allow.everyone.if.no.acl.found"] == "false"
        assert props["authorizer.class.name"] == "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
        supers = props["super.users"].split(";")
        # Every node's certificate maps to one principal: a broker added later is a super user everywhere.
        assert set(supers) == {"User:kraftform-admin", "User:kraftform-node"} | (
            {"User:kraftform-controller"} if auth == "plain" else set())
        # ... and only a node's certificate does (identity.py): any other of the CA's is a principal no ACL names.
        assert props["ssl.principal.mapping.rules"] == (
            "RULE:^CN=kraftform-node:[^,]+,O=kraftform$/kraftform-node/,DEFAULT")
        if "INTERNAL" in protocols:  # brokers talk to brokers with their certificates, never a client's password
            assert protocols["INTERNAL"] == "SSL" and props["listener.name.internal.ssl.client.auth"] == "required"
            assert props["inter.broker.listener.name"] == "INTERNAL"
            assert not any(k.startswith("listener.name.internal.") and "sasl" in k for k in props)
        assert props["ssl.keystore.type"] == "PEM" and props["ssl.truststore.type"] == "PEM"
        assert "SCRAM" not in props.get("sasl.mechanism.controller.protocol", "")


def test_brokers_have_racks_durable_defaults_and_no_auto_create() -> None:
    topo = _topo()
    rendered = _render(topo, docker_addressing(topo))
    racks = [rendered[n.name]["broker.rack"] for n in topo.brokers]
    assert racks == ["rack-a", "rack-b", "rack-c"]
    broker = rendered["kftest-broker-0"]
    assert (broker["auto.create.topics.enable"], broker["default.replication.factor"],
            broker["min.insync.replicas"], broker["unclean.leader.election.enable"]) == ("false", "3", "2", "false")
    assert broker["advertised.listeners"] == ("CLIENT://kftest-broker-0:9092,INTERNAL://kftest-broker-0:9093,"
                                              "EXTERNAL://localhost:29092")
    assert rendered["kftest-controller-0"]["controller.quorum.voters"] == (
        "1001@kftest-controller-0:9094,1002@kftest-controller-1:9094,1003@kftest-controller-2:9094")


def test_rendered_properties_hold_no_secret_only_references() -> None:
    topo = _topo("plain")
    for props in _render(topo, docker_addressing(topo)).values():
        for key, value in props.items():
            if "jaas" in key and "password" in value:
                assert 'password="${file:/etc/kraftform/secrets.properties:' in value, key


@pytest.mark.parametrize("node", ["kftest-controller-0", "kftest-broker-1"])
def test_snapshot(node: str) -> None:
    """The full rendering, sorted; regenerate with KRAFTFORM_UPDATE_SNAPSHOTS=1 and review the diff."""
    topo = _topo()
    text = properties_text(_render(topo, docker_addressing(topo))[node])
    snapshot = SNAPSHOTS / f"{node}.properties"
    if os.environ.get("KRAFTFORM_UPDATE_SNAPSHOTS"):
        snapshot.write_text(text)
    assert text == snapshot.read_text()
    keys = [line.split("=", 1)[0] for line in text.splitlines() if not line.startswith("#")]
    assert keys == sorted(keys)


def test_read_only_broker_settings_are_rendered_dynamic_ones_are_applied_live_instead() -> None:
    cluster = dataclasses.replace(load_specs(FIXTURES / "cluster").cluster, broker_config={
        "group.initial.rebalance.delay.ms": "3000", "num.io.threads": "16"})
    topo = topology(cluster)
    addr = docker_addressing(topo)
    paths = NodePaths("/etc/kraftform", "/var/lib/kafka/data")
    broker = render_properties(topo, topo.brokers[0], addr, paths)
    # Read at start: the broker's own file (and the specs' value wins over kraftform's choice of 0).
    assert broker["group.initial.rebalance.delay.ms"] == "3000"
    # Dynamic: never in the file, so changing it restarts nothing (and replaces no container under Pulumi).
    assert "num.io.threads" not in broker
    controller = render_properties(topo, topo.controllers[0], addr, paths)
    assert "group.initial.rebalance.delay.ms" not in controller
