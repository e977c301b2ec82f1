"""The `registry` section in the dev (docker) stack: the registry kraftform runs as one `SchemaRegistry` resource
beside the cluster, after its nodes, and every declared subject as one `Subjects` resource after the topics, the
registry's login a secret; an Avro consumer's job gets the writer schemas the subjects' output holds. An external
registry (`registry.url`) is no resource of the stack, its subjects are; an existing cluster's stack without a
URL is refused at the section's place."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from kraftform.pulumi.program import StackConfig, build
from kraftform.spark.manifest import read_manifest

from ...conftest import EXAMPLE_SPECS
from .mocks import SECRET_SIG, Mocks, RecordingMonitor, built_stack, pulumi_test, start
from .test_program_external import prod_config

REFUND = {"type": "record", "name": "Refund", "namespace": "payments",
          "fields": [{"name": "payment_id", "type": "string"}, {"name": "cents", "type": "long"},
                     {"name": "reason", "type": ["null", "string"], "default": None}]}
TOPIC = "payments.refunds.v1"
MONITOR: RecordingMonitor | None = None


def with_registry(specs: Path, registry: dict[str, Any]) -> Path:
    """The example specs with a registry, the refunds topic's value schema and an Avro consumer of it."""
    (specs / "topics" / "schemas").mkdir()
    (specs / "topics" / "schemas" / "refund.avsc").write_text(json.dumps(REFUND, indent=2))
    (specs / "registry.yaml").write_text(yaml.safe_dump({"registry": registry}))
    topics = specs / "topics" / "payments.yaml"
    doc = yaml.safe_load(topics.read_text())
    next(t for t in doc["topics"] if t["name"] == TOPIC)["schemas"] = {"value": "schemas/refund.avsc"}
    topics.write_text(yaml.safe_dump(doc))
    consumers = yaml.safe_load((specs / "consumers.yaml").read_text())
    consumers["consumers"].append({
        "name": "fraud-scoring-refunds", "topics": [TOPIC], "user": "fraud-scoring", "starting_offsets": "earliest",
        "value": {"format": "avro"}, "query": "SELECT payment_id, cents, coalesce(reason, 'none') AS reason\n"
                                               "FROM input\n",
        "sink": {"type": "parquet", "path": "fraud-scoring-refunds"}})
    (specs / "consumers.yaml").write_text(yaml.safe_dump(consumers))
    acls = yaml.safe_load((specs / "acls.yaml").read_text())
    acls["acls"].append({"principal": "User:fraud-scoring", "resource": {"type": "topic", "name": TOPIC},
                         "operations": ["read"]})
    (specs / "acls.yaml").write_text(yaml.safe_dump(acls))
    return specs


def _copy(tmp: Path, registry: dict[str, Any]) -> Path:
    specs = tmp / "specs"
    shutil.copytree(EXAMPLE_SPECS, specs, ignore=shutil.ignore_patterns("schema"))
    return with_registry(specs, registry)


class RegistryMocks(Mocks):
    """The registry's and the subjects' outputs as their providers make them."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        id_, outputs = super().new_resource(args)
        if args.name == "schema-registry":
            outputs["client"] = {"url": "https://127.0.0.1:18081/apis/ccompat/v6", "ca": "CA", "cert": "C", "key": "K"}
        if args.name == "subjects":
            outputs["writers"] = {TOPIC: {"7": json.dumps(REFUND)}}
        return id_, outputs


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Mocks, dict[str, Any]]]:
    global MONITOR
    specs = _copy(tmp_path_factory.mktemp("registry"), {"port": 18081})
    with built_stack("dev-registry", lambda: StackConfig(specs, image="local"), RegistryMocks()) as (
            mocks, MONITOR, outputs):
        yield mocks, outputs


@pulumi_test
def test_the_registry_runs_beside_the_cluster_and_the_subjects_follow_the_topics(
        stack: tuple[Mocks, dict[str, Any]]) -> Any:
    mocks, outputs = stack

    def check(values: list[Any]) -> None:
        registry = values[0]
        assert MONITOR is not None
        dynamic = {r.name: r for r in mocks.of_type("pulumi-python:dynamic:Resource")}
        made = dynamic["schema-registry"].inputs
        assert (made["port"], made["cluster"], made["network"]) == (18081, "platform", "kraftform-platform")
        assert made["image"].startswith("kraftform/kafka") and made["ca"][SECRET_SIG]
        assert {"platform-nodes"} <= {u.rsplit("::", 1)[1] for u in MONITOR.dependencies["schema-registry"]}
        subjects = dynamic["subjects"].inputs
        assert list(subjects["subjects"]) == [f"{TOPIC}-value"]
        declared = subjects["subjects"][f"{TOPIC}-value"]
        assert (declared["topic"], declared["part"], declared["schema_type"]) == (TOPIC, "value", "AVRO")
        assert json.loads(declared["schema"]) == REFUND and declared["compatibility"] == "BACKWARD"
        assert [c["name"] for c in subjects["consumers"]] == ["fraud-scoring-refunds"]  # the gate: who reads its topic
        assert TOPIC in subjects["topics"] and subjects["registry"][SECRET_SIG]
        assert {"topics", "schema-registry"} <= {u.rsplit("::", 1)[1] for u in MONITOR.dependencies["subjects"]}
        assert registry == {"url": "https://127.0.0.1:18081/apis/ccompat/v6", "subjects": [f"{TOPIC}-value"]}
        # The Avro consumer's job decodes with the registered versions; the JSON ones get none.
        jobs = {c.name: read_manifest(u["content"], c.name) for c in mocks.of_type("docker:index/container:Container")
                for u in (c.inputs.get("uploads") or {}).get("value") or [] if u["file"] == "/etc/kraftform/job.json"}
        assert jobs["fraud-scoring-refunds-consumer"].settings.avro_writers == {"7": json.dumps(REFUND)}
        assert jobs["fraud-scoring-consumer"].settings.avro_writers == {}

    return pulumi.Output.all(outputs["registry"], outputs["consumers"]).apply(check)  # once the consumers are made


def test_an_external_registry_is_no_resource_of_the_stack_and_its_password_stays_secret(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    specs = _copy(tmp_path, {"url": "https://registry.example.test/", "username": "kraftform",
                             "password": {"env": "REGISTRY_PASSWORD"}})
    monkeypatch.setenv("REGISTRY_PASSWORD", "registry-secret")
    with built_stack("dev-external-registry", lambda: StackConfig(specs, image="local")) as (mocks, _, outputs):
        pulumi_test(lambda: pulumi.Output.all(*outputs.values()))()
    names = {r.name: r for r in mocks.of_type("pulumi-python:dynamic:Resource")}
    assert "schema-registry" not in names
    login = names["subjects"].inputs["registry"]
    assert login[SECRET_SIG] and login["value"] == {"url": "https://registry.example.test", "username": "kraftform",
                                                    "password": "registry-secret"}
    monkeypatch.delenv("REGISTRY_PASSWORD")
    start("dev-external-registry-unset")
    with pytest.raises(pulumi.RunError, match=r"registry\.yaml:1:1: .*the registry's password is not set "
                                              r"\(env:REGISTRY_PASSWORD\); nothing was deployed"):
        build(StackConfig(specs, image="local"))


def test_an_existing_clusters_stack_needs_the_registrys_url(tmp_path: Path) -> None:
    specs = _copy(tmp_path, {"port": 18081})
    start("prod-registry")
    with pytest.raises(pulumi.RunError) as caught:
        build(replace(prod_config(tmp_path), specs_dir=specs))
    assert f"{specs / 'registry.yaml'}:1:1" in str(caught.value)
    assert "external mode runs no schema registry beside the cluster; nothing was deployed" in str(caught.value)
