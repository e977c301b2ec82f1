"""`kraftform passwords` and `kraftform stack client-files`, and the CI workflow of docs/ci.md that uses them."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml

from kraftform.cli import main
from kraftform.cluster.connection import read_connection
from kraftform.declared import load_specs
from kraftform.plan.export import password_env

from ...conftest import EXAMPLE_SPECS, REPO

USERS = [u.name for u in load_specs(EXAMPLE_SPECS).users]
VARS = [password_env(u) for u in USERS]


@pytest.fixture
def no_passwords(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in VARS:
        monkeypatch.delenv(var, raising=False)


def github_env_entries(text: str) -> dict[str, str]:
    """GitHub Actions' reading of an environment file: NAME=value, or NAME<<DELIMITER, lines, DELIMITER."""
    out: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if "<<" in line:
            name, delimiter = line.split("<<", 1)
            value = []
            for inner in lines:
                if inner == delimiter:
                    break
                value.append(inner)
            else:
                raise AssertionError(f"{name}: delimiter {delimiter} never closes")
            out[name] = "\n".join(value)
        elif "=" in line:
            name, value_ = line.split("=", 1)
            out[name] = value_
    return out


def test_passwords_lists_every_source_and_names_all_missing_without_values(
        no_passwords: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(VARS[0], "hunter2-value")
    assert main(["passwords", str(EXAMPLE_SPECS)]) == 1
    out, err = capsys.readouterr()
    assert f"{USERS[0]}: environment variable {VARS[0]}: set" in out.splitlines()
    assert "hunter2-value" not in out + err
    assert err.strip() == ("kraftform: error: 4 password(s) not set: " +
                           ", ".join(f"{v} (user {u})" for u, v in zip(USERS[1:], VARS[1:], strict=True)))
    for var in VARS[1:]:
        monkeypatch.setenv(var, "x")
    assert main(["passwords", str(EXAMPLE_SPECS), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["name"] for r in rows] == VARS and all(r["set"] for r in rows)


def test_github_env_gets_every_password_the_specs_read(
        no_passwords: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    secrets = {var: f"pw-{i}\nwith a second line" for i, var in enumerate(VARS)}
    monkeypatch.setenv("SECRETS", json.dumps({**secrets, "GITHUB_TOKEN": "unrelated"}))
    target = tmp_path / "github_env"
    target.write_text("EARLIER=kept\n")
    assert main(["passwords", str(EXAMPLE_SPECS), "--from-json-env", "SECRETS", "--github-env", str(target)]) == 0
    assert github_env_entries(target.read_text()) == {"EARLIER": "kept", **secrets}


def test_github_env_names_every_missing_secret_and_writes_nothing(
        no_passwords: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SECRETS", json.dumps({VARS[0]: "only-one"}))
    target = tmp_path / "github_env"
    assert main(["passwords", str(EXAMPLE_SPECS), "--from-json-env", "SECRETS", "--github-env", str(target)]) == 1
    err = capsys.readouterr().err
    assert all(var in err for var in VARS[1:]) and "only-one" not in err
    assert not target.exists()


def test_example_env_makes_private_random_passwords_and_keeps_them(tmp_path: Path) -> None:
    target = tmp_path / "example.env"
    assert main(["passwords", str(EXAMPLE_SPECS), "--example-env", str(target)]) == 0
    first = target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    values = dict(re.findall(r"^export (\w+)=(\S{20,})$", first, re.M))
    assert sorted(values) == sorted(VARS) and len(set(values.values())) == len(VARS)
    assert main(["passwords", str(EXAMPLE_SPECS), "--example-env", str(target)]) == 0
    assert target.read_text() == first


def workflow() -> dict[str, Any]:
    text = (REPO / "docs" / "ci.md").read_text()
    block = re.search(r"```yaml\n(.*?)```", text, re.S)
    assert block is not None
    loaded: dict[str, Any] = yaml.safe_load(block.group(1))
    return loaded


@pytest.mark.parametrize("job", ["check", "deploy"])
def test_the_ci_workflow_takes_the_passwords_from_the_specs_before_pulumi_runs(job: str) -> None:
    steps = workflow()["jobs"][job]["steps"]
    runs = [str(s.get("run", "")) for s in steps]
    exported = next(i for i, r in enumerate(runs) if r.startswith("kraftform passwords specs --from-json-env SECRETS"))
    assert steps[exported]["env"] == {"SECRETS": "${{ toJSON(secrets) }}"}
    assert '--github-env "$GITHUB_ENV"' in runs[exported]
    pulumi_step = next(i for i, s in enumerate(steps) if str(s.get("uses", "")).startswith("pulumi/actions"))
    assert exported < pulumi_step
    # Nothing hand-listed: a user added to the specs needs no change here.
    assert "KRAFTFORM_PASSWORD_" not in yaml.safe_dump(steps)


def test_client_files_from_stack_outputs_reach_the_cluster_as_admin(tmp_path: Path) -> None:
    outputs = {"adminConnection": {"bootstrapServers": "localhost:19092,localhost:19093",
                                   "securityProtocol": "SASL_SSL", "saslMechanism": "SCRAM-SHA-512",
                                   "username": "kraftform-admin", "password": 'pa"ss\\word'},
               "caCertificate": "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n", "topics": []}
    (tmp_path / "outputs.json").write_text(json.dumps(outputs))
    state = tmp_path / "state"
    assert main(["stack", "client-files", "--outputs", str(tmp_path / "outputs.json"), "--state-dir", str(state)]) == 0
    assert (state / "ca.pem").read_text() == outputs["caCertificate"]
    for name in ("admin.properties", "admin.librdkafka.conf"):
        assert stat.S_IMODE((state / name).stat().st_mode) == 0o600
        connection = read_connection(state / name)
        assert (connection.bootstrap, connection.username, connection.password, connection.ca_path) == (
            "localhost:19092,localhost:19093", "kraftform-admin", 'pa"ss\\word', str((state / "ca.pem").resolve()))


@pytest.mark.parametrize(("outputs", "message"), [
    ('{"adminConnection": "[secret]", "caCertificate": "x"}', "run `pulumi stack output --json --show-secrets`"),
    ('{"topics": []}', "no adminConnection and caCertificate outputs"),
    ("not json", "not JSON"),
])
def test_client_files_explain_what_is_wrong(tmp_path: Path, capsys: pytest.CaptureFixture[str], outputs: str,
                                            message: str) -> None:
    (tmp_path / "o.json").write_text(outputs)
    assert main(["stack", "client-files", "--outputs", str(tmp_path / "o.json"), "--state-dir",
                 str(tmp_path / "s")]) == 1
    assert message in capsys.readouterr().err
    assert not (tmp_path / "s").exists()


def test_the_example_passwords_script_takes_its_users_from_the_specs() -> None:
    script = (REPO / "scripts" / "example-passwords").read_text()
    assert "passwords specs --example-env" in script and "PAYMENTS_SERVICE" not in script
    assert os.access(REPO / "scripts" / "setup", os.R_OK)
