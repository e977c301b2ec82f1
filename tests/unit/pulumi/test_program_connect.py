"""A declared Kafka Connect cluster in the dev (docker) stack: one `ConnectCluster` resource, after the internal
topics and its users' grants, with the Connect section as data and every secret as a secret. An existing
cluster's stack refuses it at its place, as does a connector secret missing from the environment: a declared
connector `pulumi up` left out would be a change it silently ignored."""

from __future__ import annotations

import dataclasses
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest

from kraftform.pulumi.program import StackConfig

from ...conftest import EXAMPLE_SPECS, SpecsCopy
from ..specset.test_connect import with_connect
from .mocks import SECRET_SIG, Mocks, RecordingMonitor, built_stack, pulumi_test
from .test_program_external import prod_config

MONITOR: RecordingMonitor | None = None
WORKERS_PASSWORD = "KRAFTFORM_PASSWORD_ORDERS_CONNECT"


@pytest.fixture(scope="module")
def connect_specs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    specs = tmp_path_factory.mktemp("connect") / "specs"
    shutil.copytree(EXAMPLE_SPECS, specs, ignore=shutil.ignore_patterns("schema"))
    return with_connect(specs)


@pytest.fixture(scope="module")
def stack(connect_specs: Path) -> Iterator[tuple[Mocks, dict[str, Any]]]:
    global MONITOR
    os.environ.update({"IMPORT_PASSWORD": "import-secret", WORKERS_PASSWORD: "workers-secret"})
    try:
        with built_stack("dev-connect", lambda: StackConfig(connect_specs, image="local")) as (mocks, MONITOR, outputs):
            yield mocks, outputs
    finally:
        for name in ("IMPORT_PASSWORD", WORKERS_PASSWORD):
            os.environ.pop(name, None)


@pulumi_test
def test_a_connect_cluster_is_one_resource_after_its_topics_and_grants(stack: tuple[Mocks, dict[str, Any]]) -> Any:
    mocks, outputs = stack

    def check(connect: dict[str, Any]) -> None:
        assert MONITOR is not None
        [resource] = [r for r in mocks.of_type("pulumi-python:dynamic:Resource") if r.name == "connect-orders-connect"]
        inputs = resource.inputs
        assert inputs["connect"]["name"] == "orders-connect" and inputs["connect"]["workers"] == 2
        assert [c["name"] for c in inputs["connect"]["connectors"]] == ["orders-archive", "orders-import"]
        assert inputs["connect"]["connectors"][1]["config"]["api.password"] == {"name": "IMPORT_PASSWORD"}
        assert inputs["cluster"] == "platform" and inputs["network"] == "kraftform-platform"
        assert inputs["image"].startswith("kraftform/kafka")
        assert inputs["bootstrap"].startswith("platform-broker-0:")
        for secret in ("ca", "password", "environment", "connection"):
            assert inputs[secret][SECRET_SIG], secret
        assert inputs["environment"]["value"] == {"IMPORT_PASSWORD": "import-secret"}
        # Where each connector is written, for the errors; kept out of the diff.
        place = inputs["locations"]["orders-archive"]
        assert place["file"].endswith("/specs/connect.yaml")
        assert (place["line"], place["path"]) == (10, "$.connect[0].connectors[0]")
        assert connect["orders-connect"]["urls"] == ["https://127.0.0.1:18083", "https://127.0.0.1:18084"]
        assert connect["orders-connect"]["username"] == "kraftform"
        depends = {urn.rsplit("::", 1)[1] for urn in MONITOR.dependencies["connect-orders-connect"]}
        assert {"topics", "User:orders-connect", "platform-nodes"} <= depends

    return outputs["connect"].apply(check)


def test_a_connector_secret_missing_from_the_environment_is_refused_naming_it(connect_specs: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("IMPORT_PASSWORD", raising=False)
    monkeypatch.setenv(WORKERS_PASSWORD, "workers-secret")
    with pytest.raises(pulumi.RunError) as refused, built_stack("dev-connect-unset",
                                                                lambda: StackConfig(connect_specs, image="local")):
        pass
    message = str(refused.value)
    assert "1 connector secret(s) not set in the environment" in message and "IMPORT_PASSWORD" in message
    assert f"{connect_specs / 'connect.yaml'}:5" in message


def test_an_existing_clusters_stack_refuses_connect_naming_it_and_where_it_is(
        specs_copy: SpecsCopy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Its own environment, not what a test before it left: the workers' user's password is checked first.
    monkeypatch.setenv(WORKERS_PASSWORD, "workers-secret")
    specs = with_connect(specs_copy())
    with pytest.raises(pulumi.RunError) as refused, built_stack("prod-connect", lambda: dataclasses.replace(
            prod_config(tmp_path), specs_dir=specs)):
        pass
    message = str(refused.value)
    assert "external mode does not run Kafka Connect workers; nothing was deployed" in message
    assert f"{specs / 'connect.yaml'}:5" in message and "Connect cluster 'orders-connect'" in message
