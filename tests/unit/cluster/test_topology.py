from __future__ import annotations

import dataclasses

from kraftform.cluster.topology import topology
from kraftform.specset.model import ClusterSpec

CLUSTER = ClusterSpec(name="c", brokers=4, kafka_version="4.3.1", controllers=3, racks=("a", "b", "c"))


def test_dedicated_nodes_have_stable_ids_and_racks_in_turn() -> None:
    topo = topology(CLUSTER)
    assert [(n.name, n.node_id, n.roles, n.rack) for n in topo.nodes] == [
        ("c-controller-0", 1001, ("controller",), None), ("c-controller-1", 1002, ("controller",), None),
        ("c-controller-2", 1003, ("controller",), None),
        ("c-broker-0", 1, ("broker",), "a"), ("c-broker-1", 2, ("broker",), "b"),
        ("c-broker-2", 3, ("broker",), "c"), ("c-broker-3", 4, ("broker",), "a"),
    ]
    grown = topology(dataclasses.replace(CLUSTER, brokers=5))
    assert [n.node_id for n in grown.controllers] == [1001, 1002, 1003]


def test_combined_mode_first_nodes_vote() -> None:
    topo = topology(dataclasses.replace(CLUSTER, mode="combined", brokers=3, controllers=1))
    assert [(n.name, n.roles) for n in topo.nodes] == [
        ("c-node-0", ("broker", "controller")), ("c-node-1", ("broker",)), ("c-node-2", ("broker",))]
    assert len(topo.controllers) == 1 and len(topo.brokers) == 3


def test_heaps_come_from_the_spec_and_reach_the_jvm_options() -> None:
    from kraftform.cluster.config import NodePaths
    from kraftform.cluster.render import java_options

    spec = ClusterSpec("heaps", 1, "4.3.1", controllers=1, broker_heap_bytes=1024 * 1024 * 1024,
                       controller_heap_bytes=256 * 1024 * 1024)
    options = {n.name: java_options(n, NodePaths("/c", "/d")) for n in topology(spec).nodes}
    assert "-Xmx1024m" in options["heaps-broker-0"] and "-Xms1024m" in options["heaps-broker-0"]
    assert "-Xmx256m" in options["heaps-controller-0"]
    assert not any("TieredStopAtLevel" in o for opts in options.values() for o in opts)  # production: C2 too


def test_quick_start_nodes_run_the_client_compiler_only() -> None:
    from kraftform.cluster.config import NodePaths
    from kraftform.cluster.render import java_options

    spec = ClusterSpec("quick", 3, "4.3.1", quick_start=True)
    assert all("-XX:TieredStopAtLevel=1" in java_options(n, NodePaths("/c", "/d")) for n in topology(spec).nodes)
