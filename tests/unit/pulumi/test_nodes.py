"""The nodes resource's gate on destructive node work in a protected stack, called as the engine calls `check`
(pure: it reads the inputs alone; the update's own refusal is the same changes the CLI's gate reads)."""

from __future__ import annotations

import dataclasses
from typing import Any

from kraftform.cluster.containers import in_containers
from kraftform.cluster.topology import topology
from kraftform.declared import load_specs
from kraftform.pulumi.nodes import ClusterNodesProvider, nodes_props
from kraftform.specset.model import ClusterSpec

from ...conftest import EXAMPLE_SPECS

#: What the engine holds for a computed input during a preview (the secrets resource changing).
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"


def _props(spec: ClusterSpec, protect: bool, nodes: Any = None) -> dict[str, Any]:
    names: dict[str, Any] = {n.name: {} for n in topology(in_containers(spec)).nodes}
    return nodes_props(spec, "kraftform/kafka:test", {}, names if nodes is None else nodes, protect=protect)


def _failures(olds: dict[str, Any], news: dict[str, Any]) -> list[str]:
    return [f.reason for f in ClusterNodesProvider().check(olds, news).failures]


def test_a_protected_stack_refuses_brokers_and_controllers_removed_naming_each_and_the_consent() -> None:
    spec = dataclasses.replace(load_specs(EXAMPLE_SPECS).cluster, brokers=4, controllers=5)
    olds = _props(spec, True)
    fewer = dataclasses.replace(spec, brokers=3, controllers=3)
    refused = _failures(olds, _props(fewer, True, UNKNOWN))  # the new nodes unknown: a preview
    assert [r.split(" (")[0] for r in refused] == [
        "node platform-broker-3", "node platform-controller-3", "node platform-controller-4"], refused
    assert all("kraftform:protect" in r and "pulumi config set kraftform:protect false" in r for r in refused)
    assert _failures(olds, _props(fewer, False)) == []  # the consent
    assert _failures(olds, _props(spec, True)) == []  # nothing removed
    assert _failures(olds, _props(dataclasses.replace(spec, brokers=5), True)) == []  # added
    assert _failures({}, _props(spec, True)) == []  # a first `pulumi up`


def test_a_protected_stack_refuses_the_cluster_replaced() -> None:
    spec = load_specs(EXAMPLE_SPECS).cluster
    refused = _failures(_props(spec, True), _props(dataclasses.replace(spec, mode="combined"), True))
    assert len(refused) == len(topology(in_containers(spec)).nodes)
    assert all("mode changes dedicated -> combined" in r for r in refused), refused
