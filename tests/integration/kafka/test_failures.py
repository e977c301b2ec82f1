"""Every command that talks to a cluster, given a client config that cannot work: it ends with exit 1, the cause
in words and no traceback, without waiting out its timeouts (they were 30 s: librdkafka knows the cause within
milliseconds and reports it through a callback nobody read)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka.cimpl import NewTopic

from kraftform.cluster.config import properties_text
from kraftform.cluster.connection import read_client_config, read_connection
from kraftform.declared import load_specs
from kraftform.errors import AuthenticationFailed, AuthorizationDenied, ConnectionFailed, KraftformError
from kraftform.kafka.admin import TIMEOUT as ADMIN_TIMEOUT_S
from kraftform.kafka.admin import Admin
from kraftform.plan.export import password_env

from ...conftest import EXAMPLE_SPECS
from ..conftest import LiveCluster, unique
from .conftest import Workspace

pytestmark = pytest.mark.integration

#: What each broken config must say: the cause, not a symptom.
CAUSES = {
    "closed-port": "no broker answers at 127.0.0.1:9",
    "wrong-password": "authentication failed",
    "plaintext": "the listener speaks TLS and the client config asks for PLAINTEXT",
}
#: A command that took this long waited out the Admin client's own timeout instead of reading the cause (a slow
#: machine costs seconds, not this): the cause checked below is the event; this bound only a real wait reaches.
NOT_WAITED_OUT_S = ADMIN_TIMEOUT_S


def broken_state_dir(cluster: LiveCluster, root: Path, case: str) -> Path:
    """A copy of the cluster's state directory whose client configs are broken as `case` says."""
    state = root / case
    shutil.copytree(cluster.state_dir, state, ignore=shutil.ignore_patterns("nodes", "*.log", "data*"))
    java, rdkafka = read_client_config(str(state / "admin.properties")), read_client_config(
        str(state / "admin.librdkafka.conf"))
    if case == "closed-port":
        java["bootstrap.servers"] = rdkafka["bootstrap.servers"] = "127.0.0.1:9"
        deployment = json.loads((state / "cluster.json").read_text())
        (state / "cluster.json").write_text(json.dumps({**deployment, "bootstrap": "127.0.0.1:9"}))
    elif case == "wrong-password":
        java["sasl.jaas.config"] = java["sasl.jaas.config"].replace(rdkafka["sasl.password"], "not-it")
        rdkafka["sasl.password"] = "not-it"
    else:
        java = {"bootstrap.servers": java["bootstrap.servers"], "security.protocol": "PLAINTEXT"}
        rdkafka = {"bootstrap.servers": rdkafka["bootstrap.servers"], "security.protocol": "PLAINTEXT"}
    (state / "admin.properties").write_text(properties_text(java))
    (state / "admin.librdkafka.conf").write_text(properties_text(rdkafka))
    return state


COMMANDS = {
    "plan": ["plan", str(EXAMPLE_SPECS), "--command-config", "{config}"],
    "apply": ["apply", str(EXAMPLE_SPECS), "--command-config", "{config}", "--auto-approve"],
    "import": ["import", "{out}", "--command-config", "{config}"],
    "cluster status": ["cluster", "status", "--state-dir", "{state}"],
    "consumers run": ["consumers", "run", "fraud-scoring", str(EXAMPLE_SPECS), "--command-config", "{config}",
                      "--data-dir", "{out}"],
    "consumers status": ["consumers", "status", str(EXAMPLE_SPECS), "--command-config", "{config}",
                         "--data-dir", "{out}"],
    "consumers feed": ["consumers", "feed", "fraud-scoring", str(EXAMPLE_SPECS), "--command-config", "{config}",
                       "--count", "5"],
}


@pytest.mark.parametrize("case", sorted(CAUSES))
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_broken_client_config_fails_fast_with_its_cause_and_no_traceback(
        local_cluster: LiveCluster, tmp_path: Path, case: str, command: str) -> None:
    state = broken_state_dir(local_cluster, tmp_path, case)
    if command == "consumers status":  # a checkpoint to report on, so the command does reach the cluster
        commits = tmp_path / "out" / "checkpoints" / "fraud-scoring"
        for sub in ("commits", "offsets"):
            (commits / sub).mkdir(parents=True)
        (commits / "commits" / "0").write_text("v1\n{}\n")
        (commits / "offsets" / "0").write_text('v1\n{}\n{"payments.transactions.v1":{"0":0}}\n')
    argv = [a.format(config=state / "admin.properties", state=state, out=tmp_path / "out")
            for a in COMMANDS[command]]
    env = {**os.environ, **{password_env(u.name): "whatever" for u in load_specs(EXAMPLE_SPECS).users}}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "kraftform", *argv], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    took = time.monotonic() - started
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "\tat " not in done.stderr
    # `consumers run` logs in as the consumer's own user over SASL_SSL, taking only the address and CA from the
    # config: an unknown user cannot log in, and a plaintext config brings no CA to trust the brokers with.
    cause = {("consumers run", "wrong-password"): "cannot log in",
             ("consumers run", "plaintext"): "the TLS handshake failed"}.get((command, case), CAUSES[case])
    assert cause in done.stderr, done.stderr
    assert took < NOT_WAITED_OUT_S, (took, done.stderr)


def test_every_missing_password_is_named_by_plan_and_by_apply_at_once(workspace: Workspace) -> None:
    names = [workspace.name(f"user{i}").replace(".", "-") for i in range(3)]
    variables = [f"KF_TEST_UNSET_{i}_{workspace.prefix[-6:].upper()}" for i in range(3)]
    workspace.write(topics=[{"name": workspace.name("t"), "partitions": 1}],
                    users=[{"name": n, "password": {"env": v}} for n, v in zip(names, variables, strict=True)])
    planned = workspace.cli("plan")
    assert planned.returncode == 2, planned.stderr
    problems = [line.strip() for line in planned.stdout.splitlines() if line.strip().startswith("problem:")]
    assert problems == [f"problem: user {n!r}: the environment variable {v} holds no password"
                        for n, v in zip(names, variables, strict=True)]
    as_json = json.loads(workspace.cli("plan", "--format", "json").stdout)
    assert len(as_json["problems"]) == 3

    applied = workspace.cli("apply", "--auto-approve")
    assert applied.returncode == 1
    assert "3 passwords are not set; nothing was applied" in applied.stderr
    assert all(v in applied.stderr for v in variables) and "Traceback" not in applied.stderr
    assert workspace.name("t") not in workspace.observe().topics


@pytest.mark.parametrize(("case", "kind"), [("closed-port", ConnectionFailed),
                                            ("wrong-password", AuthenticationFailed),
                                            ("plaintext", ConnectionFailed)])
def test_each_failure_is_raised_as_the_error_a_user_acts_on(local_cluster: LiveCluster, tmp_path: Path, case: str,
                                                           kind: type[KraftformError]) -> None:
    """Callers (the CLI, the Pulumi providers) tell credentials from reachability by class, not by text."""
    state = broken_state_dir(local_cluster, tmp_path, case)
    with pytest.raises(kind) as raised:
        Admin(read_connection(state / "admin.properties")).metadata(timeout=10)
    assert not isinstance(raised.value, AuthenticationFailed) or case == "wrong-password"
    assert CAUSES[case] in str(raised.value)


def test_an_operation_no_acl_allows_is_an_authorization_error(local_cluster: LiveCluster) -> None:
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    admin = Admin(read_connection(local_cluster.state_dir / "admin.properties"))
    user = unique("noacl").replace(".", "-")
    upsert = UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"pw-x")
    for future in admin.client.alter_user_scram_credentials([upsert]).values():
        admin.wait(future, "create a user")
    connection = read_connection(local_cluster.state_dir / "admin.properties").as_user(user, "pw-x", "SCRAM-SHA-512")
    deadline = time.monotonic() + 60  # the credential reaches every broker within moments
    while True:
        try:
            as_user = Admin(connection)
            as_user.metadata(timeout=10)
            break
        except AuthenticationFailed:
            assert time.monotonic() < deadline
            time.sleep(0.5)
    topic = unique("noacl")
    with pytest.raises(AuthorizationDenied, match=r"AUTHORIZATION_FAILED|[Aa]uthoriz"):
        as_user.wait(as_user.client.create_topics([NewTopic(topic, 1, 1)])[topic], "create a topic")
