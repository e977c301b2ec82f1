"""The running nodes against the specs: what to add, restart (in Strimzi's order) and remove."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from kraftform.cluster.config import NodePaths
from kraftform.cluster.containers import docker_addressing
from kraftform.cluster.render import ClusterSecrets, RenderedNode, make_secrets, render_cluster
from kraftform.cluster.topology import topology
from kraftform.declared import load_specs
from kraftform.plan.nodes import RunningNode, Step, node_plan, ordered, roll_order, unprotected, unprotected_note
from kraftform.plan.state import ClusterState, TopicState
from kraftform.specset.model import ClusterSpec

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CLUSTER = load_specs(FIXTURES / "cluster").cluster


def _rendered(cluster: ClusterSpec, secrets: ClusterSecrets | None = None
              ) -> tuple[tuple[RenderedNode, ...], ClusterSecrets]:
    topo = topology(cluster)
    made = make_secrets(topo, docker_addressing(topo), keep=secrets)
    return render_cluster(topo, docker_addressing(topo), {n.name: NodePaths("/c", "/d") for n in topo.nodes},
                          made), made


def _running(cluster: ClusterSpec) -> tuple[tuple[RunningNode, ...], ClusterSecrets]:
    rendered, secrets = _rendered(cluster)
    return tuple(RunningNode(r.node.name, r.node.node_id, r.node.roles, dict(r.properties), r.node.heap_bytes,
                             cluster.kafka_version) for r in rendered), secrets


def test_the_same_specs_plan_nothing() -> None:
    running, secrets = _running(CLUSTER)
    assert node_plan(running, _rendered(CLUSTER, secrets)[0], CLUSTER.kafka_version).empty


def test_a_read_only_broker_setting_restarts_the_brokers_and_a_dynamic_one_nothing() -> None:
    running, secrets = _running(CLUSTER)
    changed = dataclasses.replace(CLUSTER, broker_config={"log.retention.check.interval.ms": "600000",
                                                          "num.io.threads": "16"})
    plan = node_plan(running, _rendered(changed, secrets)[0], CLUSTER.kafka_version)
    assert {s.node.name for s in plan.of(Step.RESTART)} == {"kftest-broker-0", "kftest-broker-1", "kftest-broker-2"}
    assert all([str(d) for d in s.differences] == ["log.retention.check.interval.ms: (unset) -> 600000"]
               for s in plan.steps)


def test_heap_and_kafka_version_restart_every_node_they_touch() -> None:
    running, secrets = _running(CLUSTER)
    bigger = dataclasses.replace(CLUSTER, controller_heap_bytes=CLUSTER.controller_heap_bytes * 2)
    plan = node_plan(running, _rendered(bigger, secrets)[0], "4.2.0")
    assert len(plan.of(Step.RESTART)) == 6
    controller = next(s for s in plan.steps if s.node.name == "kftest-controller-0")
    assert [d.key for d in controller.differences] == ["kafka_version", "heap"]


def test_a_broker_more_is_added_and_nobody_restarts_a_broker_less_is_removed() -> None:
    running, secrets = _running(CLUSTER)
    grown = node_plan(running, _rendered(dataclasses.replace(CLUSTER, brokers=4), secrets)[0], CLUSTER.kafka_version)
    assert [(s.step, s.node.name, s.node.rack) for s in grown.steps] == [(Step.ADD, "kftest-broker-3", "rack-a")]
    four, secrets4 = _running(dataclasses.replace(CLUSTER, brokers=4))
    shrunk = node_plan(four, _rendered(CLUSTER, secrets4)[0], CLUSTER.kafka_version)
    assert [(s.step, s.node.name) for s in shrunk.steps] == [(Step.REMOVE, "kftest-broker-3")]


def test_controller_count_and_unrecorded_nodes_are_refused_with_the_reason() -> None:
    running, secrets = _running(CLUSTER)
    plan = node_plan(running, _rendered(dataclasses.replace(CLUSTER, controllers=5), secrets)[0],
                     CLUSTER.kafka_version)
    assert len(plan.refused) == 2 and all("static voter list" in r for r in plan.refused)
    assert not plan.of(Step.ADD)
    old = tuple(dataclasses.replace(r, properties=None) for r in running)
    assert all("earlier kraftform" in r for r in node_plan(old, _rendered(CLUSTER, secrets)[0], "4.3.1").refused)


def test_a_change_that_would_lock_the_admin_or_the_quorum_out_is_refused_with_the_steps() -> None:
    running, secrets = _running(CLUSTER)
    security = CLUSTER.security
    for changed, setting in [
            (dataclasses.replace(security, admin_user="root"), "super users"),
            (dataclasses.replace(security, sasl_mechanism="SCRAM-SHA-256"), "SASL mechanism"),
            (dataclasses.replace(security, controller_auth="plain" if security.controller_auth == "mtls" else "mtls"),
             "security protocol")]:
        plan = node_plan(running, _rendered(dataclasses.replace(CLUSTER, security=changed), secrets)[0],
                         CLUSTER.kafka_version)
        assert len([r for r in plan.refused if setting in r]) == 1, plan.refused
        assert all("make a new cluster with it" in r for r in plan.refused)
    # Adding a listener keeps every existing one's protocol: a roll, not a lock-out.
    listener = dataclasses.replace(security.external_listener, enabled=False)
    internal, secrets = _running(dataclasses.replace(CLUSTER, security=dataclasses.replace(
        security, external_listener=listener)))
    plan = node_plan(internal, _rendered(CLUSTER, secrets)[0], CLUSTER.kafka_version)
    assert any(d.key == "listener.security.protocol.map" for s in plan.of(Step.RESTART) for d in s.differences)
    assert not plan.refused


def test_roll_order_is_followers_then_the_active_controller_then_brokers() -> None:
    running, secrets = _running(CLUSTER)
    everything = dataclasses.replace(CLUSTER, controller_heap_bytes=1 << 30, broker_heap_bytes=1 << 30)
    plan = node_plan(running, _rendered(everything, secrets)[0], CLUSTER.kafka_version)
    order = [s.node.node_id for s in roll_order(plan.of(Step.RESTART), active_controller=1002)]
    assert order == [1001, 1003, 1002, 1, 2, 3]
    grown = dataclasses.replace(everything, brokers=4)
    steps = ordered(node_plan(running, _rendered(grown, secrets)[0], CLUSTER.kafka_version), 1001)
    assert steps[0].step is Step.ADD and [s.node.node_id for s in steps[1:4]] == [1002, 1003, 1001]


def test_controller_and_per_node_settings_restart_only_the_nodes_they_are_for() -> None:
    running, secrets = _running(CLUSTER)
    changed = dataclasses.replace(CLUSTER, controller_config={"controller.quorum.fetch.timeout.ms": "3000"},
                                  node_config={"kftest-broker-2": {"num.replica.fetchers": "4"},
                                               "kftest-controller-0": {"metadata.log.segment.ms": "3600000"}})
    plan = node_plan(running, _rendered(changed, secrets)[0], CLUSTER.kafka_version)
    restarted = {s.node.name: [d.key for d in s.differences] for s in plan.steps}
    assert restarted == {"kftest-controller-0": ["controller.quorum.fetch.timeout.ms", "metadata.log.segment.ms"],
                         "kftest-controller-1": ["controller.quorum.fetch.timeout.ms"],
                         "kftest-controller-2": ["controller.quorum.fetch.timeout.ms"],
                         "kftest-broker-2": ["num.replica.fetchers"]}


def test_node_names_the_specs_check_are_the_topologys() -> None:
    from kraftform.specset.checks import node_names

    for cluster in (CLUSTER, dataclasses.replace(CLUSTER, mode="combined", brokers=4)):
        assert node_names(cluster) == [n.name for n in topology(cluster).nodes]


def test_a_new_cluster_can_change_its_quorum_and_one_made_with_a_static_quorum_cannot() -> None:
    running, secrets = _running(CLUSTER)
    assert secrets.dynamic_quorum
    rendered = _rendered(dataclasses.replace(CLUSTER, controllers=5), secrets)[0]
    plan = node_plan(running, rendered, CLUSTER.kafka_version, dynamic_quorum=True)
    assert [(s.step, s.node.name) for s in plan.steps] == [(Step.ADD, "kftest-controller-3"),
                                                           (Step.ADD, "kftest-controller-4")]
    by_name = {r.node.name: r for r in rendered}
    first = by_name["kftest-controller-0"]
    assert "controller.quorum.voters" not in first.properties
    assert first.properties["controller.quorum.bootstrap.servers"] == (
        "kftest-controller-0:9094,kftest-controller-1:9094,kftest-controller-2:9094")
    assert first.properties["controller.quorum.auto.join.enable"] == "true"
    assert first.format_options[0] == "--initial-controllers" and first.format_options[1].count("@") == 3
    assert by_name["kftest-controller-4"].format_options == ("--no-initial-controllers",)
    assert by_name["kftest-broker-0"].format_options == ("--no-initial-controllers",)
    assert "controller.quorum.auto.join.enable" not in by_name["kftest-broker-0"].properties
    static = dataclasses.replace(secrets, directory_ids={}, initial_voters="")
    assert not make_secrets(topology(CLUSTER), docker_addressing(topology(CLUSTER)), keep=static).dynamic_quorum
    assert "static voter list" in node_plan(running, rendered, CLUSTER.kafka_version).refused[0]


def test_a_new_cluster_is_formatted_at_the_declared_feature_levels_and_kraft_version_is_the_quorums() -> None:
    declared = dataclasses.replace(CLUSTER, metadata_version="4.2",
                                   features={"share.version": 0, "group.version": 1, "kraft.version": 1})
    options = _rendered(declared)[0][0].format_options
    assert options[:6] == ("--release-version", "4.2", "--feature", "group.version=1", "--feature", "share.version=0")
    assert "kraft.version=1" not in " ".join(options)
    assert not any(o in ("--release-version", "--feature") for o in _rendered(CLUSTER)[0][0].format_options)


def test_topics_a_roll_cannot_protect_are_named_with_their_reason() -> None:
    state = ClusterState(topics={
        "safe": TopicState("safe", 3, 3, {"min.insync.replicas": "2"}),
        "single": TopicState("single", 1, 1),
        "tight": TopicState("tight", 3, 2, {"min.insync.replicas": "2"}),
        "by-default": TopicState("by-default", 1, 2),
        "__consumer_offsets": TopicState("__consumer_offsets", 50, 1),
    }, topic_defaults={"min.insync.replicas": "2"})
    assert unprotected(state) == ["by-default (replicas 2, min.insync.replicas 2)",
                                  "single (replicas 1, min.insync.replicas 2)",
                                  "tight (replicas 2, min.insync.replicas 2)"]
    assert unprotected_note(state).startswith("3 topic(s) unprotected during the roll")
    assert unprotected_note(ClusterState(topics={"safe": state.topics["safe"]})) == ""
