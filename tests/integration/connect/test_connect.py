"""Kafka Connect as code: a real distributed worker (Kafka's connect-runtime from Maven Central) started by
`kraftform connect up` beside a cluster, logging in over SASL_SSL as its declared user with derived grants,
its REST API over TLS behind basic authentication; Kafka's FileStream sink and source declared, validated by the
plugins at plan time, applied, drifted with a raw REST call and repaired, paused and resumed, deleted only when
allowed. The tests run in order on one Connect cluster.
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from kraftform.cluster.connect import WORKER_BASE_ENV
from kraftform.connect.reconcile import STABLE_FOR_S
from kraftform.connect.rest import ConnectRest
from kraftform.declared import load_specs
from kraftform.errors import PlanRefusedError
from kraftform.kafka.apply import ApplyOptions
from kraftform.kafka.observe import acl_bindings
from kraftform.kafka.reconcile import apply_cluster, plan_cluster
from kraftform.plan.changes import Action, Kind
from kraftform.runtime.connect.clusters import workers_logins
from kraftform.testing.variant import for_tests

from ..conftest import unique
from .conftest import (
    ARCHIVER,
    ARCHIVER_PASSWORD_ENV,
    DEBEZIUM,
    FILE_SINK,
    FILE_SOURCE,
    PASSWORD_ENV,
    PG_PASSWORD_ENV,
    POSTGRES_CONNECTOR,
    Connected,
)

pytestmark = pytest.mark.integration

def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.is_file() else []


def test_the_rest_api_answers_only_an_authenticated_user_over_tls(connected: Connected) -> None:
    assert connected.rest("GET", "/connectors") == []
    for password in ("", "wrong"):
        with pytest.raises(urllib.error.HTTPError) as refused:
            connected.rest("GET", "/connectors", password=password)
        assert refused.value.code == 401
    worker = connected.worker()
    # Plain HTTP gets a TLS alert, no HTTP answer (http.client reads it as a bad status line).
    with pytest.raises(http.client.HTTPException):
        urllib.request.urlopen(f"http://{worker['host']}:{worker['port']}/connectors", timeout=10)


def test_a_worker_process_holds_only_the_basics_and_the_declared_connector_secrets(connected: Connected) -> None:
    # The CLI that started it had every KRAFTFORM_PASSWORD_* of the specs in its environment (and this suite's).
    raw = Path(f"/proc/{connected.worker()['pid']}/environ").read_bytes()
    names = {entry.split(b"=", 1)[0].decode() for entry in raw.split(b"\0") if entry}
    declared = {n for spec in load_specs(connected.root).connect for n in spec.environment_names}
    assert names <= WORKER_BASE_ENV | declared, names - WORKER_BASE_ENV - declared
    assert "PATH" in names
    properties = (connected.dir / "worker-0" / "worker.properties").read_text()
    assert "config.providers.env.param.allowlist.pattern=" in properties


def test_connect_up_puts_no_password_on_a_command_line(connected: Connected) -> None:
    """Every process's command line while `connect up` started the workers (keystores, the worker JVM): none
    holds the workers' login, a connector's user's, the REST API's, the key stores' or a connector secret's
    password."""
    lines = connected.up_command_lines
    assert any("ConnectDistributed" in line for line in lines), "no worker's command line sampled"
    made = json.loads((connected.dir / "secrets.json").read_text())
    secrets = {"the workers' user": os.environ[PASSWORD_ENV], "the archiver's": os.environ[ARCHIVER_PASSWORD_ENV],
               "the database's (a connector secret)": os.environ[PG_PASSWORD_ENV],
               "the REST API's": made["rest_password"], "the key stores'": made["store_password"]}
    assert [who for who, secret in secrets.items() if any(secret in line for line in lines)] == []


def test_a_plan_never_rotates_or_deletes_the_login_its_running_workers_hold(connected: Connected) -> None:
    specs = for_tests(load_specs(connected.root), "fast", connected.cluster.name)
    admin = connected.cluster.admin
    logins = workers_logins(connected.cluster.state_dir)
    assert set(logins) == {"orders-connect"}, logins
    rotated = {**connected.cluster.passwords, "orders-connect": "not-what-the-workers-hold"}
    live = plan_cluster(admin, specs, found=rotated, logins=logins)
    [refused] = live.plan.refused
    assert (refused.kind, refused.resource) == (Kind.USER, "orders-connect"), live.plan.changes
    assert "Connect cluster 'orders-connect' logs in as it, 1 worker(s) running" in refused.reason
    assert "rule: own logins" in refused.reason and "kraftform connect down" in refused.reason, refused.reason
    with pytest.raises(PlanRefusedError):
        apply_cluster(admin, specs, live, ApplyOptions(), lambda _line: None)
    # Nothing was sent: the workers' password still logs in. Without the running workers' record the same plan
    # rotates it under them, which the rule is there to stop.
    assert plan_cluster(admin, specs, found=connected.cluster.passwords, logins=logins).plan.empty
    assert (Action.UPDATE, Kind.USER, "orders-connect") in {
        (c.action, c.kind, c.resource) for c in plan_cluster(admin, specs, found=rotated).plan.changes}


def test_a_declared_plugin_loads_and_one_whose_checksum_differs_is_refused_before_any_worker_restarts(
        connected: Connected) -> None:
    classes = {p["class"] for p in connected.rest("GET", "/connector-plugins")}
    assert {POSTGRES_CONNECTOR, FILE_SINK, FILE_SOURCE} <= classes, classes
    workers = (connected.dir / "workers.json").read_text()
    connected.connect["plugins"][0]["sha256"] = "0" * 64
    connected.write()
    try:
        refused = connected.kraftform("up")
        assert refused.returncode == 1, refused.stdout + refused.stderr
        assert (f"plugin 'debezium-postgres' ({connected.root / 'connect.yaml'}:" in refused.stderr
                and "has SHA-256 e7bb97f0" in refused.stderr and "refusing to load it" in refused.stderr), \
            refused.stderr
        assert (connected.dir / "workers.json").read_text() == workers
    finally:
        connected.connect["plugins"][0]["sha256"] = DEBEZIUM["sha256"]
        connected.write()


def test_a_setting_the_plugin_refuses_stops_the_plan_at_the_connectors_line(connected: Connected) -> None:
    del connected.connector("lines")["config"]["topic"]
    # Debezium's own checks too (the declared plugin), on a capture with no topic prefix.
    connected.connect["connectors"].append(
        {"name": "cdc", "class": POSTGRES_CONNECTOR, "type": "source", "topics": [connected.lines],
         "config": {"database.hostname": "127.0.0.1", "database.port": 1, "database.user": "cdc",
                    "database.password": {"env": "KC_CDC_PASSWORD"}, "database.dbname": "orders"}})
    connected.write()
    try:
        planned = connected.kraftform("plan")
        assert planned.returncode == 1, planned.stdout + planned.stderr
        assert "connect.yaml:" in planned.stdout and "connector 'lines': topic:" in planned.stdout, planned.stdout
        assert "Missing required configuration \"topic\"" in planned.stdout, planned.stdout
        assert "connector 'cdc': topic.prefix:" in planned.stdout, planned.stdout
        refused = connected.kraftform("apply", "--auto-approve")
        assert refused.returncode == 1 and "nothing was applied" in refused.stderr
        assert connected.rest("GET", "/connectors") == []
    finally:
        connected.connector("lines")["config"]["topic"] = connected.lines
        connected.connect["connectors"].pop()
        connected.write()


def test_declared_connectors_move_data_both_ways_and_a_second_apply_is_empty(connected: Connected) -> None:
    planned = connected.kraftform("plan")
    assert planned.returncode == 2 and planned.stdout.count("[safe] create connector") == 2, planned.stdout
    applied = connected.kraftform("apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert connected.kraftform("plan").returncode == 0

    producer = Producer(connected.cluster.client())
    for i in range(300):
        producer.produce(connected.orders, key=str(i % 7), value=json.dumps(f"order-{i}"))
    assert producer.flush(30) == 0
    with (connected.files / "in.txt").open("a") as f:
        f.writelines(f"line {i}\n" for i in range(200))
    deadline = time.monotonic() + 90
    while len(_lines(connected.files / "archive.txt")) < 300 and time.monotonic() < deadline:
        time.sleep(1)
    # JsonConverter without schemas hands the sink each JSON string as a string: one line per record.
    assert sorted(_lines(connected.files / "archive.txt")) == sorted(f"order-{i}" for i in range(300))
    assert sorted(_consume(connected, connected.lines, 200)) == sorted(f"line {i}" for i in range(200))


def _consume(connected: Connected, topic: str, count: int) -> list[str]:
    consumer = Consumer({**connected.cluster.client(), "group.id": unique("kcread"),
                         "enable.auto.commit": "false"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen: list[str] = []
    deadline = time.monotonic() + 90
    try:
        while len(seen) < count and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is not None and not message.error():
                seen.append(json.loads(message.value() or b'""'))
    finally:
        consumer.close()
    return seen


def test_drift_made_through_the_rest_api_shows_in_the_plan_and_apply_repairs_it(connected: Connected) -> None:
    config = connected.rest("GET", "/connectors/archive/config")
    connected.rest("PUT", "/connectors/archive/config", {**config, "file": str(connected.files / "elsewhere.txt")})
    planned = connected.kraftform("plan")
    assert planned.returncode == 2, planned.stdout + planned.stderr
    assert f"file: {connected.files / 'elsewhere.txt'} -> {connected.files / 'archive.txt'}" in planned.stdout
    assert connected.kraftform("apply", "--auto-approve").returncode == 0
    assert connected.rest("GET", "/connectors/archive/config")["file"] == str(connected.files / "archive.txt")
    assert connected.kraftform("plan").returncode == 0


def test_a_create_sent_again_for_a_connector_that_exists_puts_it_as_declared_at_once(connected: Connected) -> None:
    # An apply killed (or timed out) after its POST got through sends it again: Connect answers 409, as it does
    # while rebalancing; it is told apart, not waited out for a minute and failed.
    worker = connected.worker()
    secret = json.loads((connected.dir / "secrets.json").read_text())["rest_password"]
    rest = ConnectRest(f"https://{worker['host']}:{worker['port']}", "kraftform", secret,
                       connected.cluster.admin.ca_path)
    config = connected.rest("GET", "/connectors/archive/config")
    started = time.monotonic()
    rest.create("archive", {**config, "file": str(connected.files / "again.txt")}, "running")
    assert time.monotonic() - started < 10
    assert connected.rest("GET", "/connectors/archive/config")["file"] == str(connected.files / "again.txt")
    planned = connected.kraftform("plan")
    assert planned.returncode == 2 and "again.txt" in planned.stdout, planned.stdout
    assert connected.kraftform("apply", "--auto-approve").returncode == 0
    assert connected.kraftform("plan").returncode == 0


def test_pause_and_resume_as_declared_and_status_says_so(connected: Connected) -> None:
    connected.connector("archive")["state"] = "paused"
    connected.write()
    applied = connected.kraftform("apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert connected.rest("GET", "/connectors/archive/status")["connector"]["state"] == "PAUSED"
    status = connected.kraftform("status")
    assert status.returncode == 0 and "ok   archive: paused (declared paused)" in status.stdout, status.stdout
    connected.connector("archive")["state"] = "running"
    connected.write()
    assert "[safe] update connector" in connected.kraftform("plan").stdout
    assert connected.kraftform("apply", "--auto-approve").returncode == 0
    assert connected.rest("GET", "/connectors/archive/status")["connector"]["state"] == "RUNNING"


def test_a_source_writing_a_topic_its_user_has_no_grant_on_fails_the_apply_with_kafkas_refusal(
        connected: Connected) -> None:
    # Declared as writing `lines` (so granted that), configured to write `other`: Kafka's authorizer refuses.
    connected.connect["connectors"].append(
        {"name": "stray", "class": FILE_SOURCE, "type": "source", "topics": [connected.lines],
         "config": {"file": str(connected.files / "in.txt"), "topic": connected.other}})
    connected.write()
    # Connect's production window: the task reports running before Kafka refuses its first write.
    applied = connected.kraftform("apply", "--auto-approve", "--stable-for", str(STABLE_FOR_S), timeout=400)
    assert applied.returncode == 1, applied.stdout + applied.stderr
    assert "connector 'stray'" in applied.stderr and "TopicAuthorizationException" in applied.stderr, applied.stderr
    status = connected.kraftform("status")
    assert status.returncode == 2 and "DIFF stray" in status.stdout, status.stdout
    assert "PROBLEM: connector orders-connect/stray: task 0 failed:" in status.stdout, status.stdout
    # `kraftform status` judges the Connect clusters beside the cluster with the rest.
    overall = subprocess.run([sys.executable, "-m", "kraftform", "status", str(connected.root), "--state-dir",
                              str(connected.cluster.state_dir)], capture_output=True, text=True, timeout=120)
    assert overall.returncode == 2, overall.stdout + overall.stderr
    assert "connector orders-connect/archive: running (declared running); task 0 running" in overall.stdout
    assert "PROBLEM: connector orders-connect/stray: task 0 failed:" in overall.stdout, overall.stdout


def test_an_undeclared_connector_is_deleted_only_when_allowed(connected: Connected) -> None:
    connected.connect["connectors"] = [c for c in connected.connect["connectors"] if c["name"] != "stray"]
    connected.write()
    planned = connected.kraftform("plan")
    assert "[destructive] delete connector" in planned.stdout and "/stray" in planned.stdout, planned.stdout
    refused = connected.kraftform("apply", "--auto-approve")
    assert refused.returncode == 1 and "--allow-destructive" in refused.stderr
    assert "stray" in connected.rest("GET", "/connectors")
    assert connected.kraftform("apply", "--auto-approve", "--allow-destructive").returncode == 0
    assert sorted(connected.rest("GET", "/connectors")) == ["archive", "lines"]
    assert connected.kraftform("plan").returncode == 0


def _declare_state(connected: Connected, name: str, state: str) -> None:
    connected.connector(name)["state"] = state
    connected.write()
    applied = connected.kraftform("apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr


def test_a_stopped_sources_offsets_reset_replays_exactly_what_it_had_read(connected: Connected) -> None:
    shown = connected.kraftform("offsets", "lines", "--format", "json")
    assert shown.returncode == 0, shown.stdout + shown.stderr
    size = (connected.files / "in.txt").stat().st_size
    assert json.loads(shown.stdout)["offsets"] == [
        {"partition": {"filename": str(connected.files / "in.txt")}, "offset": {"position": size}}]
    # Connect moves the offsets of a stopped connector only: named before anything is sent.
    running = connected.kraftform("offsets", "lines", "--reset", "--apply", "--allow-destructive")
    assert running.returncode == 1 and "connector 'lines' is running" in running.stdout, running.stdout
    _declare_state(connected, "lines", "stopped")
    planned = connected.kraftform("offsets", "lines", "--reset")
    assert planned.returncode == 2 and "[destructive]" in planned.stdout and "starts over" in planned.stdout
    refused = connected.kraftform("offsets", "lines", "--reset", "--apply")
    assert refused.returncode == 1 and "--allow-destructive" in refused.stderr, refused.stderr
    reset = connected.kraftform("offsets", "lines", "--reset", "--apply", "--allow-destructive")
    assert reset.returncode == 0, reset.stdout + reset.stderr
    assert json.loads(connected.kraftform("offsets", "lines", "--format", "json").stdout)["offsets"] == []
    _declare_state(connected, "lines", "running")
    replayed = _consume(connected, connected.lines, 400)
    assert replayed[200:] == replayed[:200] == [f"line {i}" for i in range(200)]


def test_a_stopped_sink_moved_back_by_a_set_file_writes_again_what_lies_between(connected: Connected,
                                                                                tmp_path: Path) -> None:
    _declare_state(connected, "archive", "stopped")
    offsets = json.loads(connected.kraftform("offsets", "archive", "--format", "json").stdout)["offsets"]
    assert sum(o["offset"]["kafka_offset"] for o in offsets) == 300, offsets
    # Each partition holding 10 or more records back by 10: that many times 10 records written again.
    offsets = [o for o in offsets if o["offset"]["kafka_offset"] >= 10]
    for o in offsets:
        o["offset"]["kafka_offset"] -= 10
    replays = 10 * len(offsets)
    wanted = tmp_path / "offsets.json"
    wanted.write_text(json.dumps({"offsets": offsets}))
    planned = connected.kraftform("offsets", "archive", "--set", str(wanted))
    assert planned.returncode == 2 and planned.stdout.count("moves 10 back: replays") == len(offsets), planned.stdout
    moved = connected.kraftform("offsets", "archive", "--set", str(wanted), "--apply")
    assert moved.returncode == 0, moved.stdout + moved.stderr
    assert connected.kraftform("offsets", "archive", "--set", str(wanted)).returncode == 0
    before = _lines(connected.files / "archive.txt")
    _declare_state(connected, "archive", "running")
    deadline = time.monotonic() + 90
    while len(_lines(connected.files / "archive.txt")) < len(before) + replays and time.monotonic() < deadline:
        time.sleep(1)
    time.sleep(3)  # and nothing more
    again = _lines(connected.files / "archive.txt")[len(before):]
    assert len(again) == replays and set(again) <= set(before), again


def test_a_connector_with_its_own_user_reads_as_that_user_and_its_password_stays_out_of_the_rest_api(
        connected: Connected) -> None:
    # `other` is granted to the archiver alone: the workers' user may not read it, so records reaching the file
    # show the sink's consumer logged in as the archiver.
    connected.connect["connectors"].append(
        {"name": "own", "class": FILE_SINK, "type": "sink", "topics": [connected.other], "user": ARCHIVER,
         "config": {"file": str(connected.files / "own.txt")}})
    connected.write()
    connected.apply_kafka()
    granted = {(b.principal, b.operation) for b in acl_bindings(connected.cluster.admin)
               if b.resource_type == "topic" and b.resource_name == connected.other}
    assert granted == {(f"User:{ARCHIVER}", "read"), (f"User:{ARCHIVER}", "describe")}, granted
    password = connected.cluster.passwords[ARCHIVER]
    planned = connected.kraftform("plan")
    assert planned.returncode == 2 and "[safe] create connector orders-connect/own" in planned.stdout, planned.stdout
    applied = connected.kraftform("apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    logins = connected.dir / "logins"
    assert (logins / ARCHIVER).read_text() == password and (logins / ARCHIVER).stat().st_mode & 0o077 == 0
    producer = Producer(connected.cluster.client())
    for i in range(50):
        producer.produce(connected.other, value=json.dumps(f"own-{i}"))
    assert producer.flush(30) == 0

    def arrived(count: int) -> list[str]:
        deadline = time.monotonic() + 90
        while len(_lines(connected.files / "own.txt")) < count and time.monotonic() < deadline:
            time.sleep(1)
        return _lines(connected.files / "own.txt")

    assert sorted(arrived(50)) == sorted(f"own-{i}" for i in range(50))
    config = connected.rest("GET", "/connectors/own/config")
    assert f'username="{ARCHIVER}"' in config["consumer.override.sasl.jaas.config"]
    assert "${dir:" in config["consumer.override.sasl.jaas.config"]
    assert password not in json.dumps(config)
    assert not [log for log in connected.dir.glob("worker-*/worker.log") if password in log.read_text()]
    assert connected.kraftform("plan").returncode == 0
    # A login file that is not the user's password (as after a rotation): the plan restarts the connector's tasks,
    # and they read on with the password rewritten.
    (logins / ARCHIVER).write_text("not-the-password")
    planned = connected.kraftform("plan")
    assert planned.returncode == 2 and "[disruptive] update connector orders-connect/own" in planned.stdout
    assert f"the password of its user {ARCHIVER!r} changed" in planned.stdout, planned.stdout
    applied = connected.kraftform("apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert (logins / ARCHIVER).read_text() == password
    for i in range(50, 60):
        producer.produce(connected.other, value=json.dumps(f"own-{i}"))
    assert producer.flush(30) == 0
    assert sorted(set(arrived(60))) == sorted(f"own-{i}" for i in range(60))
    assert connected.kraftform("plan").returncode == 0
