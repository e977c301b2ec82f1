"""Only a node's certificate is a node: the common names only `issue_node` gives, the rules nodes are rendered with,
and the two rolls that move a cluster made before them."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from kraftform.cluster.certificates import issue, issue_node, make_ca
from kraftform.cluster.containers import docker_addressing
from kraftform.cluster.identity import (
    LEGACY_MAPPING,
    MOVING_MAPPING,
    PRINCIPAL_MAPPING,
    is_node_certificate,
    principal_mapping,
)
from kraftform.cluster.render import make_secrets
from kraftform.cluster.topology import topology
from kraftform.declared import load_specs
from kraftform.errors import UsageError
from kraftform.specset.model import NODE_PRINCIPAL

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def _maps(rules: str, subject: str) -> str:
    """The principal Kafka's SslPrincipalMapper gives `subject` under `rules` (RULE:pattern/replacement/, first
    match wins; DEFAULT keeps the name)."""
    for rule in re.findall(r"RULE:\^(.*?)\$/(.*?)/|DEFAULT", rules):
        if rule == ("", ""):
            return subject
        if re.fullmatch(rule[0], subject):
            return str(rule[1])
    raise AssertionError(f"no rule for {subject}")


@pytest.mark.parametrize("subject", ["CN=outsider,O=kraftform", "CN=registry 127.0.0.1,O=kraftform",
                                     "CN=platform Connect worker 0,O=kraftform", "CN=kraftform-node,O=kraftform",
                                     "CN=x,OU=kraftform-node:y,O=kraftform"])
def test_no_certificate_but_a_nodes_is_the_node_principal(subject: str) -> None:
    assert _maps(PRINCIPAL_MAPPING, subject) == subject
    assert _maps(LEGACY_MAPPING, subject) == NODE_PRINCIPAL or "OU=" in subject  # the hole this closes


def test_a_node_certificate_is_the_node_principal_under_every_rule_of_the_move() -> None:
    node = "CN=kraftform-node:platform-broker-1,O=kraftform"
    old = "CN=platform-broker-1,O=kraftform"
    assert {_maps(rules, node) for rules in (LEGACY_MAPPING, MOVING_MAPPING, PRINCIPAL_MAPPING)} == {NODE_PRINCIPAL}
    assert _maps(MOVING_MAPPING, old) == NODE_PRINCIPAL  # the first roll trusts both
    assert _maps(PRINCIPAL_MAPPING, old) == old  # the second does not


def test_only_issue_node_gives_a_node_identity() -> None:
    ca = make_ca("c")
    assert is_node_certificate(issue_node(ca, "c-broker-1").cert_pem)
    assert not is_node_certificate(issue(ca, "c-broker-1").cert_pem)
    with pytest.raises(UsageError, match="the cluster's nodes' own"):
        issue(ca, "kraftform-node:c-broker-1")


def test_the_rules_follow_what_the_running_nodes_were_started_with() -> None:
    key = "ssl.principal.mapping.rules"
    assert principal_mapping([]) == PRINCIPAL_MAPPING  # a new cluster
    assert principal_mapping([{key: LEGACY_MAPPING}] * 3) == MOVING_MAPPING  # the first roll
    assert principal_mapping([{key: MOVING_MAPPING}, {key: LEGACY_MAPPING}, None]) == MOVING_MAPPING  # resumed
    assert principal_mapping([{key: MOVING_MAPPING}] * 3) == PRINCIPAL_MAPPING  # the second roll
    assert principal_mapping([{key: PRINCIPAL_MAPPING}, {key: MOVING_MAPPING}]) == PRINCIPAL_MAPPING


def test_kept_secrets_issue_again_only_the_keys_from_before_the_node_identity() -> None:
    topo = topology(load_specs(FIXTURES / "cluster").cluster)
    addr = docker_addressing(topo)
    made = make_secrets(topo, addr)
    assert all(is_node_certificate(k.cert_pem) for k in made.node_keys.values())
    old = "kftest-broker-1"
    legacy = dict(made.node_keys) | {old: issue(made.ca, old)}
    kept = make_secrets(topo, addr, keep=dataclasses.replace(made, node_keys=legacy))
    assert kept.node_keys[old] != legacy[old] and is_node_certificate(kept.node_keys[old].cert_pem)
    assert {n: k for n, k in kept.node_keys.items() if n != old} == {
        n: k for n, k in made.node_keys.items() if n != old}
    assert kept.ca == made.ca
