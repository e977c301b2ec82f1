"""Feature levels as code against a real cluster of its own (one combined node, started through
`kraftform.testing` as a user's suite starts one): formatted at the declared levels, raised and lowered with
UpdateFeatures as `kraftform apply` does it, a downgrade waiting for --allow-destructive, and a move Kafka refuses
refused in the plan in Kafka's words, before anything is sent."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kraftform.definitions.features import RELEASE_FEATURES
from kraftform.kafka.admin import Requests, kafka_python_admin
from kraftform.kafka.observe import observe

from .conftest import OneNode, one_node

pytestmark = pytest.mark.integration

#: A cluster at Kafka 4.0's feature levels, transaction.version below 4.0's own.
AT_4_0 = {"metadata_version": "4.0"}


class Featured(OneNode):
    def declare_features(self, features: dict[str, int]) -> None:
        self.declare({**AT_4_0, "features": features})

    def finalised(self) -> dict[str, int]:
        with kafka_python_admin(self.running.admin, Requests()) as client:
            return {name: int(v["finalized"][1]) for name, v in client.describe_features().items()
                    if "finalized" in v}


@pytest.fixture(scope="module")
def featured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Featured]:
    with one_node(tmp_path_factory.mktemp("features"), {**AT_4_0, "features": {"transaction.version": 1}}) as node:
        yield Featured(node.specs, node.cluster)


def test_a_new_cluster_is_formatted_at_the_declared_levels_and_plans_no_change(featured: Featured) -> None:
    levels = featured.finalised()
    assert levels["metadata.version"] == RELEASE_FEATURES["4.0"]["metadata.version"]
    assert levels["transaction.version"] == 1  # below 4.0's own 2: the declared level, not the release's
    assert "share.version" not in levels  # 4.0 does not finalise it
    planned = featured.kraftform("plan")
    assert planned.returncode == 0, planned.stdout + planned.stderr


def test_features_go_up_and_down_as_declared_and_kafka_refusals_are_planned_in_its_words(featured: Featured) -> None:
    featured.declare_features({"transaction.version": 2, "share.version": 1, "kraft.version": 0})
    planned = featured.kraftform("plan")
    assert planned.returncode == 2, planned.stdout + planned.stderr
    assert "[disruptive] update feature transaction.version level: 1 -> 2" in planned.stdout, planned.stdout
    assert "[disruptive] update feature share.version level: 0 -> 1" in planned.stdout, planned.stdout
    assert "Kafka refuses kraft.version 1 -> 0: Invalid update version 0 for feature kraft.version. Can't " \
           "downgrade the version of this feature." in planned.stdout, planned.stdout
    refused = featured.kraftform("apply", "--auto-approve")
    assert refused.returncode == 1 and "refused changes; nothing was applied" in refused.stderr, refused.stderr
    assert featured.finalised()["transaction.version"] == 1

    featured.declare_features({"transaction.version": 2, "share.version": 1})
    applied = featured.kraftform("apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    levels = featured.finalised()
    assert (levels["transaction.version"], levels["share.version"]) == (2, 1)
    assert featured.kraftform("plan").returncode == 0

    featured.declare_features({"transaction.version": 2, "share.version": 0})
    lowered = featured.kraftform("plan")
    assert "[destructive] update feature share.version level: 1 -> 0" in lowered.stdout, lowered.stdout
    waiting = featured.kraftform("apply", "--auto-approve")
    assert waiting.returncode == 1 and "--allow-destructive" in waiting.stderr, waiting.stderr
    assert featured.finalised()["share.version"] == 1
    done = featured.kraftform("apply", "--auto-approve", "--allow-destructive")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "share.version" not in featured.finalised()  # level 0: no longer finalised
    assert featured.kraftform("plan").returncode == 0


def test_with_elr_enabled_kafka_keeps_min_isr_as_a_cluster_default_the_plan_compares(featured: Featured) -> None:
    featured.declare_features({"transaction.version": 2, "eligible.leader.replicas.version": 1})
    applied = featured.kraftform("apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    state = observe(featured.running.admin).state
    assert state.features["eligible.leader.replicas.version"] == 1
    # The brokers' static value (defaults.min_insync_replicas: 1) became a cluster-level dynamic default.
    assert state.broker_defaults.get("min.insync.replicas") == "1", state.broker_defaults
    assert featured.kraftform("plan").returncode == 0
