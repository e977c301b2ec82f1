"""What a spec edit redeploys: the program built twice under mocks, each consumer container's inputs compared as
the engine compares them (a container whose inputs differ is replaced; one whose inputs are equal is left)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kraftform.pulumi.program import StackConfig

from ...conftest import SpecsCopy, edit
from .mocks import SECRET_SIG, registered


def consumer_containers(specs_dir: Path) -> dict[str, dict[str, Any]]:
    """Each consumer container's inputs (uploads unwrapped from their secret), by resource name."""
    mocks = registered("dev", lambda: StackConfig(specs_dir, image="local"))

    def plain(value: Any) -> Any:
        return value["value"] if isinstance(value, dict) and SECRET_SIG in value else value

    return {c.name: {k: plain(v) for k, v in c.inputs.items()}
            for c in mocks.of_type("docker:index/container:Container") if c.name.endswith("-consumer")}


@pytest.fixture(scope="module")
def before(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    from ...conftest import EXAMPLE_SPECS

    return consumer_containers(EXAMPLE_SPECS)


def changed_by(before: dict[str, dict[str, Any]], specs_copy: SpecsCopy, change: Callable[[Path], None]
               ) -> set[str]:
    specs = specs_copy()
    change(specs)
    after = consumer_containers(specs)
    assert set(after) == set(before) == {"fraud-scoring-consumer", "clickstream-sessionizer-consumer"}
    return {name for name in before if before[name] != after[name]}


def test_the_same_specs_give_the_same_inputs_so_a_second_up_is_empty(before: dict[str, dict[str, Any]],
                                                                      specs_copy: SpecsCopy) -> None:
    assert changed_by(before, specs_copy, lambda _specs: None) == set()


def test_editing_one_consumers_query_replaces_that_consumer_alone(before: dict[str, dict[str, Any]],
                                                                  specs_copy: SpecsCopy) -> None:
    def rescore(specs: Path) -> None:
        edit(specs / "consumers.yaml", "WHEN amount >= 5000 THEN 0.5", "WHEN amount >= 4000 THEN 0.5")

    assert changed_by(before, specs_copy, rescore) == {"fraud-scoring-consumer"}


def test_growing_a_topic_that_consumers_read_replaces_no_consumer(before: dict[str, dict[str, Any]],
                                                                  specs_copy: SpecsCopy) -> None:
    def grow(specs: Path) -> None:  # fraud-scoring reads it; its settings do not follow 12 -> 24 partitions
        edit(specs / "topics" / "payments.yaml", "partitions: 12", "partitions: 24")

    assert changed_by(before, specs_copy, grow) == set()


def test_another_principals_grants_and_a_quota_replace_no_consumer(before: dict[str, dict[str, Any]],
                                                                   specs_copy: SpecsCopy) -> None:
    def regrant(specs: Path) -> None:
        edit(specs / "quotas.yaml", "producer_byte_rate: 60MB/s", "producer_byte_rate: 70MB/s")
        edit(specs / "consumers.yaml", "description: Sessions of page views", "description: Sessions of views")

    assert changed_by(before, specs_copy, regrant) == set()


def test_a_change_the_job_does_use_replaces_that_consumer(before: dict[str, dict[str, Any]],
                                                          specs_copy: SpecsCopy) -> None:
    def faster(specs: Path) -> None:  # the sessionizer's micro-batch interval
        edit(specs / "consumers.yaml", "trigger: 30s", "trigger: 20s")

    assert changed_by(before, specs_copy, faster) == {"clickstream-sessionizer-consumer"}


def test_declared_feature_levels_replace_no_node_and_go_to_a_features_resource(specs_copy: SpecsCopy) -> None:
    """A node's format options only count when it is first made: levels in its command would restart every
    node and finalise nothing. They go to one resource that sets them with UpdateFeatures."""
    from ...conftest import EXAMPLE_SPECS

    def nodes_and_features(specs_dir: Path) -> tuple[dict[str, Any], list[Any]]:
        mocks = registered("dev", lambda: StackConfig(specs_dir, image="local"))
        dynamic = mocks.of_type("pulumi-python:dynamic:Resource")
        [resource] = [r for r in dynamic if r.name == "platform-nodes"]
        return resource.inputs["nodes"], [r for r in dynamic if r.name == "features"]

    plain_nodes, none = nodes_and_features(EXAMPLE_SPECS)
    assert none == []  # nothing declared: not managed
    specs = specs_copy()
    edit(specs / "cluster.yaml", "  brokers: 3\n", "  brokers: 3\n  features: {share.version: 0, group.version: 1}\n")
    nodes, [features] = nodes_and_features(specs)
    assert len(nodes) == 6 and nodes == plain_nodes
    assert features.inputs["levels"] == {"group.version": 1, "share.version": 0}


def test_declared_groups_settings_go_to_one_resource(specs_copy: SpecsCopy) -> None:
    specs = specs_copy()
    (specs / "groups.yaml").write_text("groups:\n  - name: billing\n    config: {consumer.session.timeout.ms: 50000}\n")
    mocks = registered("dev", lambda: StackConfig(specs, image="local"))
    [resource] = [r for r in mocks.of_type("pulumi-python:dynamic:Resource") if r.name == "group-settings"]
    assert resource.inputs["groups"] == {"billing": {"consumer.session.timeout.ms": "50000"}}
