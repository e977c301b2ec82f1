"""Day 2 on a real cluster of its own (JVMs on this machine): the cluster section changed in the specs and applied
with `kraftform apply --state-dir`, as a user would, each change checked from outside (process ids, Kafka's own
ConfigCommand, a VerifiableProducer with acks=all writing throughout, the partitions' replicas and leaders).

The tests run in order on one cluster, each leaving it matching its specs (`plan` empty) for the next. The engine is
one (runtime/nodes/rolling.py); what differs between runtimes is how a node is stopped, started, added and removed. The
local runtime takes every change here; the Docker runtime takes the interrupted roll (its resume renames a
container back) on the hosts package's cluster (tests/integration/hosts/test_cluster.py, each node on its host's
engine), and tests/integration/pulumi/test_cluster_nodes.py drives Docker through the same engine for a setting,
a node that cannot start, brokers and controllers added and removed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import cast

import pytest
import yaml
from confluent_kafka.admin import (
    NewTopic,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from kraftform.cluster import render
from kraftform.cluster.certificates import issue
from kraftform.cluster.identity import LEGACY_MAPPING, MAPPING_KEY, PRINCIPAL_MAPPING, is_node_certificate
from kraftform.definitions.features import RELEASE_FEATURES
from kraftform.kafka.admin import Admin, Requests, kafka_python_admin
from kraftform.kafka.health import wait_healthy
from kraftform.kafka.observe import observe
from kraftform.runtime.nodes import deployment
from kraftform.runtime.nodes.deployment import admin_config, load, load_secrets
from kraftform.runtime.nodes.local import LocalRuntime, _runs_node
from kraftform.runtime.nodes.tools import CONFIGS, run_kafka_tool
from kraftform.specset.model import SCRAM_ANCHORS
from kraftform.verification.secretscan import CommandLineSampler
from kraftform.versions import KAFKA_VERSION

from ...conftest import java_hashmap_order
from .conftest import Day2, Producer, own_cluster, read_values, roll_killed_and_resumed

#: The runtimes a test runs on (the fixture's parameter): one cluster per runtime, made once for the module.
LOCAL = pytest.mark.parametrize("day2", ["local"], indirect=True)
#: The release the local cluster starts on: the one pinned before KAFKA_VERSION.
OLD = "4.3.1"


@pytest.fixture(scope="module")
def day2(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Day2]:
    """The local cluster starts on the release pinned before (OLD): its roll is the upgrade. It starts as kraftform
    made clusters before the node identity (cluster/identity.py): every node's certificate named by the node alone,
    and any certificate of the cluster's CA mapped to the node principal; its first test moves it."""
    version: dict[str, object] = {"kafka_version": OLD} if request.param == "local" else {}
    with contextlib.ExitStack() as stack:
        with pytest.MonkeyPatch.context() as made_before:
            made_before.setattr(deployment, "principal_mapping_now", lambda _state_dir: LEGACY_MAPPING)
            made_before.setattr(render, "issue_node", issue)
            cluster = stack.enter_context(own_cluster(tmp_path_factory.mktemp("day2"), request.param, True,
                                                      name=f"kfday2{request.param[0]}", **version))
        yield cluster


@LOCAL
def test_a_cluster_made_before_the_node_identity_moves_onto_it_in_two_rolls_losing_no_write(day2: Day2) -> None:
    """A cluster an earlier kraftform made, where any certificate of its CA was a super user (issue 59), moved by
    a plain `apply` while a VerifiableProducer with acks=all writes: the plan shows every node restarting for the
    principal mapping; the first roll gives each node its node certificate and both rules, the second the node
    rule alone, and no node is locked out on the way (the roll's gates hold, no acknowledged write is lost)."""
    assert not any(is_node_certificate(k.cert_pem) for k in load_secrets(day2.state).node_keys.values())
    before = day2.pids()
    planned = day2.kraftform("plan")
    assert planned.stdout.count("ssl.principal.mapping.rules") == len(before), planned.stdout
    topic = f"day2.identity.{uuid.uuid4().hex[:6]}"
    admin = day2.admin  # kept: a client destroyed while its future is pending fails it
    admin.create_topics([NewTopic(topic, 3, 3, config={"min.insync.replicas": "2"})])[topic].result(90)
    applied, acked = _apply_writing(day2, topic)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    restarts = [line for line in applied.stderr.splitlines() if ": restarting (" in line and line.endswith("...")]
    assert len(restarts) == 2 * len(before), applied.stderr
    assert "trust only nodes'" in applied.stderr
    assert all(n.properties and n.properties[MAPPING_KEY] == PRINCIPAL_MAPPING for n in load(day2.state).nodes)
    assert all(is_node_certificate(k.cert_pem) for k in load_secrets(day2.state).node_keys.values())
    assert len(acked) > 500, (day2.state / "producer.stderr").read_text()[-2000:]
    lost = acked - read_values(day2, topic, 3)
    assert not lost, f"{len(lost)} acknowledged records lost"
    assert day2.placement()[2] == 0


def _apply_writing(day2: Day2, topic: str) -> tuple[subprocess.CompletedProcess[str], set[int]]:
    """`apply` while a VerifiableProducer with acks=all writes into `topic`: its result and the writes acknowledged."""
    producer = Producer(day2, topic)
    try:
        applied = day2.kraftform("apply", "--auto-approve")
    finally:
        acked = producer.stop()
    return applied, acked


def _name(day2: Day2) -> str:
    return load(day2.state).cluster_name


@LOCAL
def test_plan_is_empty_once_moved(day2: Day2) -> None:
    done = day2.kraftform("plan")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "No changes" in done.stdout


@LOCAL
def test_a_dynamic_setting_is_applied_live_and_config_command_drift_shows(day2: Day2) -> None:
    before = day2.pids()
    day2.edit(broker_config={"num.replica.fetchers": "2"})
    planned = day2.kraftform("plan")
    assert planned.returncode == 2 and "num.replica.fetchers: 1 -> 2" in planned.stdout, planned.stdout
    applied = day2.kraftform("apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert day2.pids() == before  # no process restarted
    # Drift made with Kafka's own tool, behind the specs' back, shows in the next plan.
    deployment = load(day2.state)
    run_kafka_tool(CONFIGS, ["--bootstrap-server", deployment.bootstrap, "--command-config",
                             str(day2.state / "admin.properties"), "--alter", "--entity-type", "brokers",
                             "--entity-name", "2", "--add-config", "num.replica.fetchers=3"])
    drifted = day2.kraftform("plan")
    assert drifted.returncode == 2 and "broker 2 num.replica.fetchers: 3 -> 2" in drifted.stdout, drifted.stdout
    assert day2.kraftform("apply", "--auto-approve").returncode == 0
    assert day2.kraftform("plan").returncode == 0


@LOCAL
def test_an_admin_or_mechanism_change_that_would_lock_kraftform_out_is_refused_and_nothing_restarts(
        day2: Day2) -> None:
    before = day2.pids()
    security = yaml.safe_load((day2.specs / "cluster.yaml").read_text())["cluster"].get("security", {})
    for changed in ({"admin_user": "another-admin"}, {"sasl_mechanism": "SCRAM-SHA-256"}):
        day2.edit(security={**security, **changed})
        planned = day2.kraftform("plan")
        assert planned.returncode == 2 and "make a new cluster with it" in planned.stdout, planned.stdout
        applied = day2.kraftform("apply", "--auto-approve")
        assert applied.returncode == 1 and "nothing was applied" in applied.stderr, applied.stderr
    assert day2.pids() == before
    day2.edit(security=security or None)
    assert day2.kraftform("plan").returncode == 0


@LOCAL
def test_an_upgrade_rolls_one_node_at_a_time_loses_no_acknowledged_write_and_finalises_only_when_asked(
        day2: Day2) -> None:
    """A Kafka upgrade as a user does it: `kafka_version` of the pinned release in the specs of a cluster running the
    one pinned before, rolled onto the new jars node by node (controllers first, each back before the next goes
    down) while a VerifiableProducer with acks=all writes; then `metadata_version` finalised only when asked, as
    the destructive change it is, and a lower release refused. The roll every setting read at start takes too
    (tests/integration/pulumi/test_cluster_nodes.py restarts the brokers alone for one, through the same engine)."""
    assert _metadata_version(day2) == RELEASE_FEATURES["4.3"]["metadata.version"]
    topic = f"day2.roll.{uuid.uuid4().hex[:6]}"
    admin = day2.admin  # kept: a client destroyed while its future is pending fails it
    # The first topic of a cluster just started: 30 s was once too short on a loaded CI machine.
    admin.create_topics([NewTopic(topic, 3, 3, config={"min.insync.replicas": "2"})])[topic].result(90)
    before = day2.pids()
    day2.edit(kafka_version=KAFKA_VERSION)
    planned = day2.kraftform("plan")
    assert planned.stdout.count(f"kafka_version: {OLD} -> {KAFKA_VERSION}") == 6, planned.stdout
    assert "rolling restart 1/6" in planned.stdout and "rolling restart 6/6" in planned.stdout
    applied, acked = _apply_writing(day2, topic)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    after = day2.pids()
    assert all(after[n] != before[n] for n in before)  # each node restarted ...
    assert all(n.kafka_version == KAFKA_VERSION for n in load(day2.state).nodes)
    assert all(f"kafka-{KAFKA_VERSION}" in Path(f"/proc/{n.handle}/cmdline").read_text()
               for n in load(day2.state).nodes)
    # ... one at a time, controllers first, each back before the next went down.
    order = [line.split(":")[0].split("] ")[1] for line in applied.stderr.splitlines() if line.endswith("...")
             and ": restarting (" in line]
    assert sorted(order) == sorted(before) and all("controller" in n for n in order[:3]), applied.stderr
    assert len(acked) > 1000, (day2.state / "producer.stderr").read_text()[-2000:]
    lost = acked - read_values(day2, topic, 3)
    assert not lost, f"{len(lost)} acknowledged records lost"
    assert day2.placement()[2] == 0
    # The new jars run the old metadata version until the specs ask for the new one.
    assert _metadata_version(day2) == RELEASE_FEATURES["4.3"]["metadata.version"]
    assert day2.kraftform("plan").returncode == 0

    day2.edit(metadata_version="4.4")
    planned = day2.kraftform("plan")
    assert "[destructive] update feature metadata.version level: 30 -> 33" in planned.stdout, planned.stdout
    refused = day2.kraftform("apply", "--auto-approve")
    assert refused.returncode == 1 and "--allow-destructive" in refused.stderr
    assert _metadata_version(day2) == 30
    assert day2.kraftform("apply", "--auto-approve", "--allow-destructive").returncode == 0
    assert _metadata_version(day2) == RELEASE_FEATURES["4.4"]["metadata.version"]
    assert day2.kraftform("plan").returncode == 0

    day2.edit(metadata_version="4.3")
    lowered = day2.kraftform("plan")
    assert "refuse feature metadata.version level: 33 -> 30" in lowered.stdout, lowered.stdout
    assert day2.kraftform("apply", "--auto-approve", "--allow-destructive").returncode == 1
    day2.edit(metadata_version="4.4")
    assert day2.kraftform("plan").returncode == 0


def _metadata_version(day2: Day2) -> int:
    with kafka_python_admin(admin_config(day2.state), Requests()) as client:
        return int(client.describe_features()["metadata.version"]["finalized"][1])


@LOCAL
def test_a_node_that_cannot_start_halts_the_roll_and_the_others_keep_running(day2: Day2) -> None:
    before = day2.pids()
    # Valid by type and range, refused by Kafka at start: it must exceed replica.socket.timeout.ms (30 s).
    day2.edit(broker_config={"num.replica.fetchers": "2", "log.retention.check.interval.ms": "600000",
                             "replica.fetch.wait.max.ms": "60000"})
    applied = day2.kraftform("apply", "--auto-approve", "--node-timeout", "120")
    assert applied.returncode == 1
    first = f"{_name(day2)}-broker-0"
    assert f"{first} did not come back with its new configuration" in applied.stderr, applied.stderr
    assert "replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms" in applied.stderr
    if day2.runtime.name == "local":  # the runtime started the process, so it reads how it ended
        assert "(the process exited with status 1)" in applied.stderr, applied.stderr
    assert "started again with its previous configuration and is back" in applied.stderr
    assert f"Not restarted: {_name(day2)}-broker-1, {_name(day2)}-broker-2" in applied.stderr
    after = day2.pids()
    assert {n: p for n, p in after.items() if n != first} == {n: p for n, p in before.items() if n != first}
    assert after[first]  # running again, on its previous configuration
    # The specs put back, nothing is left to do.
    day2.edit(broker_config={"num.replica.fetchers": "2"})
    done = day2.kraftform("plan")
    assert done.returncode == 0, done.stdout


@LOCAL
def test_a_broker_that_dies_is_left_out_of_the_reading_then_started_again_by_apply_taking_every_login(
        day2: Day2) -> None:
    """A broker stays in the metadata until its session ends, refusing connections meanwhile (a roll's broker
    stopping, one an interrupted apply left stopping): reading every broker's settings waits until it has left
    (CI once failed an apply on "cannot describe the settings of broker 1 ... Broker transport failure"). A
    declared node that is not running is node work: the plan says so (before, "No changes", exit 0) and apply
    starts it with its data.

    A SCRAM user created and deleted before the broker died: without the SCRAM anchors the cluster is formatted
    with (specset/model.py), the restarted broker refused the admin's login (Kafka 4.4.0: `churn-0` comes before
    the admin in the map it rebuilds its users from and, being deleted, emptied it), while the others took it."""
    nodes = cast(LocalRuntime, day2.runtime)
    broker = next(r for r in load(day2.state).nodes if r.roles == ["broker"])
    connection = admin_config(day2.state)
    assert connection.mechanism and connection.username
    assert java_hashmap_order([connection.username, "churn-0"])[0] == "churn-0"
    admin = Admin(connection)
    described = admin.client.describe_user_scram_credentials()  # every user's: one future
    assert isinstance(described, Future)
    assert set(SCRAM_ANCHORS.values()) <= set(admin.wait(described, "describe SCRAM users"))
    mechanism = ScramMechanism[connection.mechanism.replace("-", "_")]
    for alteration in (UserScramCredentialUpsertion("churn-0", ScramCredentialInfo(mechanism, 4096), b"churn-0"),
                       UserScramCredentialDeletion("churn-0", mechanism)):
        admin.wait(admin.client.alter_user_scram_credentials([alteration])["churn-0"], "alter churn-0")
    nodes.kill_node(broker.name)
    try:
        observed = observe(admin_config(day2.state), broker_keys=("num.replica.fetchers",))
        assert broker.node_id not in observed.state.brokers
        assert broker.node_id not in observed.state.broker_settings and observed.state.broker_settings
        assert observed.requests["DescribeCluster"] >= 2  # read again after the failure
        planned = day2.kraftform("plan")
        assert planned.returncode == 2, planned.stdout + planned.stderr
        assert f"{broker.name} running: stopped -> running" in planned.stdout, planned.stdout
        applied = day2.kraftform("apply", "--auto-approve")
        assert applied.returncode == 0, applied.stdout + applied.stderr
        assert f"{broker.name}: not running; starting it with its data and configuration" in applied.stderr
    finally:
        if not nodes.process_id(broker.name):
            nodes.start_node(broker.name)
    assert nodes.process_id(broker.name)
    brokers = {r.node_id: r.name for r in load(day2.state).nodes if "broker" in r.roles}
    assert wait_healthy(admin_config(day2.state), brokers, timeout=180).brokers == tuple(sorted(brokers))
    assert day2.kraftform("plan").returncode == 0
    address = next(f"{b.host}:{b.port}" for node, b in Admin(connection).metadata().brokers.items()
                   if node == broker.node_id)
    assert broker.node_id in Admin(dataclasses.replace(connection, bootstrap=address)).metadata().brokers


@LOCAL
def test_an_apply_killed_in_a_roll_is_resumed_at_the_node_it_was_restarting(day2: Day2) -> None:
    """As `roll_killed_and_resumed` says; the Docker runtime's (a container renamed back) is the hosts package's."""
    roll_killed_and_resumed(day2)


#: `kraftform apply` SIGKILLed the moment a node's JVM is launched, before its process id is recorded: the point
#: a random kill almost never hits, made certain (the apply kills itself there).
KILLED_AT_LAUNCH = """
import os, signal, sys
from kraftform.runtime.nodes import local
launch = local.LocalRuntime._start
def launch_then_die(self, *args, **kwargs):
    launch(self, *args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)
local.LocalRuntime._start = launch_then_die
from kraftform.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _jvms(nodes: LocalRuntime, name: str) -> list[int]:
    """Every process running a node's files, whatever the state says."""
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()
            and _runs_node(int(p.name), nodes.node_dir(name))]


@LOCAL
def test_three_to_four_brokers_moves_partitions_onto_the_new_one_and_back(day2: Day2) -> None:
    admin = day2.admin
    topics = [f"day2.load.{i}.{uuid.uuid4().hex[:4]}" for i in range(4)]
    for future in admin.create_topics([NewTopic(t, 6, 3) for t in topics]).values():
        future.result(30)
    day2.edit(brokers=4)
    planned = day2.kraftform("plan")
    assert planned.returncode == 2
    assert f"create cluster {_name(day2)}-broker-3 node: broker 4" in planned.stdout, planned.stdout
    # The plan's moves are the fewest balance needs, in replicas, bytes and time at the throttle.
    moves = re.search(r"(\d+) replica\(s\) of \d+ partition\(s\) in \d+ topic\(s\) move, where balance needs at "
                      r"least (\d+)", planned.stdout)
    assert moves is not None and moves[1] == moves[2] and int(moves[1]) > 0, planned.stdout
    assert re.search(r"to copy \(at least [\d.]+ \w*B\), about \d+ s at 50 MiB/s per broker", planned.stdout)
    with CommandLineSampler(0.01) as sampler:  # the new broker formatted (the admin's credential) and started
        applied = day2.kraftform("apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert any("StorageTool" in line and "format" in line for line in sampler.seen), "no format's line sampled"
    password = admin_config(day2.state).password or ""
    assert password
    assert [line for line in sampler.seen if password in line] == [], "a command line held the admin's password"
    replicas, leaders, offline = day2.placement()
    assert offline == 0 and set(replicas) == {1, 2, 3, 4}
    assert replicas[4] == int(moves[1]), (replicas, moves[0])  # every replica moved went to the new broker
    # Racks a, b, c, a: every partition keeps one replica per rack, so brokers 1 and 4 share rack a's replicas
    # evenly and leaders spread over all four.
    assert abs(replicas[1] - replicas[4]) <= 1 and replicas[2] == replicas[3], replicas
    assert max(leaders.values()) - min(leaders.values()) <= 1, leaders
    assert day2.kraftform("plan").returncode == 0

    day2.edit(brokers=3)
    refused = day2.kraftform("apply", "--auto-approve")
    assert refused.returncode == 1 and "--allow-destructive" in refused.stderr
    applied = day2.kraftform("apply", "--auto-approve", "--allow-destructive")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    replicas, leaders, offline = day2.placement()
    assert offline == 0 and set(replicas) == {1, 2, 3}
    assert max(leaders.values()) - min(leaders.values()) <= 1, leaders
    assert f"{_name(day2)}-broker-3" not in day2.pids()
    assert not (day2.state / "nodes" / f"{_name(day2)}-broker-3").exists()  # its data
    assert json.loads((day2.state / "cluster.json").read_text())["brokers"] == 3
    assert day2.kraftform("plan").returncode == 0


@LOCAL
def test_cluster_up_on_a_changed_cluster_points_at_apply(day2: Day2) -> None:
    day2.edit(resources={"broker_heap": "512MiB"})
    done = subprocess.run([shutil.which("kraftform") or "kraftform", "cluster", "up", str(day2.specs), "--runtime",
                           day2.runtime.name, "--state-dir", str(day2.state)], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 1 and "kraftform apply --state-dir" in done.stderr, done.stderr
    day2.edit(resources=None)


@LOCAL
def test_three_to_five_controllers_and_back_keep_a_leader_and_serve_metadata_throughout(day2: Day2) -> None:
    """KIP-853: a cluster kraftform makes can change its controller quorum. A watcher reads the quorum every half
    second throughout; a topic is created after each step."""
    from kraftform.kafka.gates import read_quorum

    leaderless: list[str] = []
    stop = threading.Event()

    def watch() -> None:
        while not stop.is_set():
            try:
                quorum = read_quorum(admin_config(day2.state))
                if quorum.leader < 0:
                    leaderless.append(f"no leader at {time.time():.1f}")
            except Exception as exc:
                leaderless.append(f"{type(exc).__name__}: {exc}")
            stop.wait(0.5)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        day2.edit(controllers=5)
        planned = day2.kraftform("plan")
        assert f"create cluster {_name(day2)}-controller-3 node: controller 1004" in planned.stdout, planned.stdout
        grown = day2.kraftform("apply", "--auto-approve")
        assert grown.returncode == 0, grown.stdout + grown.stderr
        assert set(read_quorum(admin_config(day2.state)).behind_ms) == {1001, 1002, 1003, 1004, 1005}
        _create_topic(day2, "five")
        assert day2.kraftform("plan").returncode == 0

        day2.edit(controllers=3)
        shrunk = day2.kraftform("apply", "--auto-approve", "--allow-destructive")
        assert shrunk.returncode == 0, shrunk.stdout + shrunk.stderr
        assert set(read_quorum(admin_config(day2.state)).behind_ms) == {1001, 1002, 1003}
        _create_topic(day2, "three")
        assert day2.kraftform("plan").returncode == 0
    finally:
        stop.set()
        watcher.join(timeout=10)
    assert not leaderless, leaderless[:5]


def _create_topic(day2: Day2, label: str) -> None:
    admin = day2.admin
    topic = f"day2.quorum.{label}.{uuid.uuid4().hex[:4]}"
    admin.create_topics([NewTopic(topic, 3, 3)])[topic].result(30)


@LOCAL
def test_an_apply_killed_between_a_new_brokers_launch_and_its_record_is_finished_by_the_next_one(
        day2: Day2) -> None:
    """Last of the module: its add and removal leave a placement the balance checks above do not start from. The
    new broker is recorded before it starts: killed right after the launch, the state names the node
    without its process, and the next apply finds that JVM by its files, waits for it and moves the partitions
    (never a second JVM on its data); removing it stops that JVM."""
    nodes = cast(LocalRuntime, day2.runtime)
    name = f"{_name(day2)}-broker-3"
    admin = day2.admin
    topic = f"day2.launch.{uuid.uuid4().hex[:4]}"
    for future in admin.create_topics([NewTopic(topic, 6, 3)]).values():
        future.result(30)
    day2.edit(brokers=4)
    killed = subprocess.run([sys.executable, "-c", KILLED_AT_LAUNCH, "apply", str(day2.specs), "--state-dir",
                             str(day2.state), "--auto-approve"], capture_output=True, text=True, timeout=600)
    try:
        assert killed.returncode == -signal.SIGKILL, killed.stdout + killed.stderr
        assert load(day2.state).node(name).handle == ""  # recorded, its process not
        orphan = _jvms(nodes, name)
        assert len(orphan) == 1, orphan
        planned = day2.kraftform("plan")
        assert planned.returncode == 2 and f"create cluster {name}" not in planned.stdout, planned.stdout
        applied = day2.kraftform("apply", "--auto-approve")
        assert applied.returncode == 0, applied.stdout + applied.stderr
        assert _jvms(nodes, name) == orphan and load(day2.state).node(name).handle == str(orphan[0])
        # The client files name the new broker too (the killed apply never got to write them).
        assert load(day2.state).brokers == 4 and len(load(day2.state).bootstrap.split(",")) == 4
        replicas, _, offline = day2.placement()
        assert offline == 0 and set(replicas) == {1, 2, 3, 4} and replicas[4] > 0, replicas
        assert day2.kraftform("plan").returncode == 0
    finally:
        day2.edit(brokers=3)
        removed = day2.kraftform("apply", "--auto-approve", "--allow-destructive")
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert _jvms(nodes, name) == [] and day2.placement()[2] == 0
    admin.delete_topics([topic])[topic].result(30)
