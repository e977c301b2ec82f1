"""The prod stack shape (Pulumi.prod.yaml): an existing cluster, under Pulumi's mocks."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from kraftform.declared import load_specs
from kraftform.plan.export import password_env

from ...conftest import EXAMPLE_SPECS, REPO
from .mocks import SECRET_SIG, SECRET_VALUE, Mocks, RecordingMonitor, built_stack, pulumi_test, start

MONITOR: RecordingMonitor | None = None
CA = "-----BEGIN CERTIFICATE-----\nthe prod CA\n-----END CERTIFICATE-----\n"
BOOTSTRAP = "kafka-1.prod.example.com:9093,kafka-2.prod.example.com:9093"


def prod_config(tmp: Path, **changes: Any) -> Any:
    from kraftform.pulumi.program import StackConfig

    (tmp / "ca.pem").write_text(CA)
    values: dict[str, Any] = {"mode": "external", "env": "prod", "bootstrap": BOOTSTRAP,
                              "username": "kraftform-admin", "password": pulumi.Output.secret("admin-secret"),
                              "ca_path": str(tmp / "ca.pem"), **changes}
    return StackConfig(Path(EXAMPLE_SPECS), **values)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Mocks, dict[str, Any]]]:
    global MONITOR
    with built_stack("prod", lambda: prod_config(tmp_path_factory.mktemp("prod"))) as (mocks, MONITOR, outputs):
        yield mocks, outputs


@pulumi_test
def test_an_external_cluster_gets_no_containers_and_its_own_address(stack: tuple[Mocks, dict[str, Any]]) -> Any:
    mocks, outputs = stack

    def check(values: list[Any]) -> None:
        assert not [r for r in mocks.resources if r.typ.startswith("docker:")]
        assert values[0] == BOOTSTRAP
        assert values[1] == CA
        topics = next(r for r in mocks.of_type("pulumi-python:dynamic:Resource") if r.name == "topics")
        assert "payments.transactions.v1" in topics.inputs["topics"]
        connection = topics.inputs["connection"]  # a secret as a whole: the admin password is inside
        assert connection[SECRET_SIG] == SECRET_VALUE
        assert connection["value"]["bootstrap"] == BOOTSTRAP
        assert connection["value"]["username"] == "kraftform-admin"

    return pulumi.Output.all(outputs["bootstrapServers"], outputs["caCertificate"]).apply(check)


@pulumi_test
def test_prod_topics_and_principals_are_protected(stack: tuple[Mocks, dict[str, Any]]) -> Any:
    mocks, outputs = stack

    def check(_: Any) -> None:
        assert MONITOR is not None
        kafka = [r.name for r in mocks.of_type("pulumi-python:dynamic:Resource")]
        assert len(kafka) == 1 + 7 + 1  # the topics, one resource per principal, and the broker settings
        assert all(MONITOR.protected[name] for name in kafka)
        [topics] = [r for r in mocks.of_type("pulumi-python:dynamic:Resource") if r.name == "topics"]
        assert topics.inputs["protect"] is True  # the provider refuses to delete a topic removed from the specs

    return pulumi.Output.all(*outputs.values()).apply(check)


@pytest.mark.parametrize(("changes", "message"), [
    ({"password": None}, "external mode needs kraftform:bootstrapServers"),
    ({"ca_path": "/nonexistent/ca.pem"}, "kraftform:caPath: /nonexistent/ca.pem is not a file"),
    ({"deploy_consumers": True, "ca_path": None}, "kraftform:deployConsumers in external mode needs kraftform:caPath"),
])
def test_missing_connection_settings_are_named(tmp_path: Path, changes: dict[str, Any], message: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from kraftform.pulumi.program import build

    # The users' passwords set, as `stack` sets them: this test runs without it too (`-k connection`).
    for user in load_specs(EXAMPLE_SPECS).users:
        monkeypatch.setenv(password_env(user.name), f"secret-of-{user.name}")
    start("prod-broken")
    with pytest.raises(pulumi.RunError, match=message):
        build(prod_config(tmp_path, **changes))


def stack_file_config(name: str, text: str | None = None, **extra: str) -> Any:
    """StackConfig.from_pulumi over a stack file's settings (the committed file, or `text`), as the engine hands
    them to the program: strings, secure values already decrypted (passed in `extra`)."""
    from pulumi.runtime.config import set_all_config

    from kraftform.pulumi.program import StackConfig

    loaded = yaml.safe_load(text if text is not None else (REPO / name).read_text())
    values = {k: v for k, v in loaded["config"].items() if not isinstance(v, dict)}
    strings = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in values.items()}
    set_all_config({**strings, **extra}, list(extra))
    try:
        return StackConfig.from_pulumi(REPO)
    finally:
        set_all_config({}, [])


def test_the_example_stack_files_read_as_intended() -> None:
    prod = stack_file_config("Pulumi.prod.yaml", **{"kraftform:password": "s3cret"})
    assert (prod.mode, prod.env, prod.protects) == ("external", "prod", True)
    assert prod.specs_dir == REPO / "specs" and prod.ca_path == str(REPO / "ca.pem")
    assert prod.bootstrap and prod.bootstrap.startswith("kafka-1.prod.example.com:9093,")
    assert isinstance(prod.password, pulumi.Output)  # from `pulumi config set --secret`: stays a secret
    dev = stack_file_config("Pulumi.dev.yaml")
    assert (dev.mode, dev.env, dev.image, dev.protects) == ("docker", "dev", "local", False)


def test_a_wrong_mode_is_named() -> None:
    with pytest.raises(pulumi.RunError, match="kraftform:mode must be docker or external, got 'k8s'"):
        stack_file_config("Pulumi.dev.yaml", **{"kraftform:mode": "k8s"})


# What ordinary Pulumi commands do to a committed stack file (seen on a real engine): `pulumi stack init` adds an
# encryption salt, `pulumi config set kraftform:protect true` rewrites the boolean as a string, and `pulumi config
# set --secret` adds a secure value. The file must still mean the same stack.
STACK_FILE_EDITS = {
    "stack init": lambda text: "encryptionsalt: v1:c2FsdA==:v1:aXY=:Y2lwaGVy\n" + text,
    "config set (quoted boolean)": lambda text: text.replace("kraftform:protect: true", 'kraftform:protect: "true"'),
    "config set --secret": lambda text: text + "  kraftform:password:\n    secure: v1:bm9uY2U=:Y2lwaGVydGV4dA==\n",
}


@pytest.mark.parametrize("edit", sorted(STACK_FILE_EDITS))
def test_the_stack_files_mean_the_same_after_pulumis_own_edits(edit: str) -> None:
    for name, extra in (("Pulumi.prod.yaml", {"kraftform:password": "s3cret"}), ("Pulumi.dev.yaml", {})):
        original = (REPO / name).read_text()
        edited = STACK_FILE_EDITS[edit](original)
        before, after = stack_file_config(name, **extra), stack_file_config(name, edited, **extra)
        # (secrets are Outputs, equal only to themselves: compared apart, by being there)
        assert replace(after, password=None, admin_password=None) == replace(before, password=None,
                                                                             admin_password=None)
        assert (after.password is None) == (before.password is None)
