"""Monitoring against a real cluster of its own (a broker is SIGKILLed here) and a real Prometheus from Debian's
package, started by `kraftform monitoring up` as a user starts it: every node scraped, the course's metrics with
their healthy values, `kraftform status` and the alerts on a killed broker and on a stopped consumer whose input
keeps growing, and every dashboard panel's query answered with series.

The tests run in order on one cluster: healthy, a broker killed and back, then a Spark consumer run and stopped.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import Consumer

from kraftform.kafka.clients import produce_paced
from kraftform.monitoring.dashboard import panels
from kraftform.runtime.nodes.deployment import admin_config
from kraftform.runtime.observation.monitoring import running

from .conftest import Day2, own_cluster

INTERVAL = 2.0
#: Every rule's `for:` capped (`monitoring up --max-for`): the rules fire as in production, without their minutes.
MAX_FOR_S = 10
PASSWORD_ENV = "KRAFTFORM_PASSWORD_MON_SCORER"
TOPIC = "mon.payments"
CONSUMER = "mon-scorer"
GROUP = "mon-billing"


@dataclass
class Monitored:
    cluster: Day2
    data_dir: Path
    env: dict[str, str]

    @property
    def prometheus(self) -> str:
        found = running(self.cluster.state)
        assert found is not None
        return found.prometheus_url

    def query(self, promql: str) -> list[dict[str, Any]]:
        url = f"{self.prometheus}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(url, timeout=10) as response:
            body = json.load(response)
        assert body["status"] == "success", body
        return list(body["data"]["result"])

    def value(self, promql: str) -> float:
        result = self.query(promql)
        assert len(result) == 1, (promql, result)
        return float(result[0]["value"][1])

    def firing(self) -> set[tuple[str, str]]:
        """(alert, its node or consumer label) of every firing alert."""
        with urllib.request.urlopen(f"{self.prometheus}/api/v1/alerts", timeout=10) as response:
            alerts = json.load(response)["data"]["alerts"]
        return {(a["labels"]["alertname"], a["labels"].get("consumer") or a["labels"].get("node", ""))
                for a in alerts if a["state"] == "firing"}

    def kraftform(self, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "kraftform", *args], capture_output=True, text=True,
                              timeout=timeout, env=self.env, check=False)

    def status(self) -> subprocess.CompletedProcess[str]:
        return self.kraftform("status", str(self.cluster.specs), "--state-dir", str(self.cluster.state),
                              "--data-dir", str(self.data_dir), timeout=60)


def _write_specs(specs: Path) -> None:
    sections: dict[str, Any] = {
        "topics": [{"name": TOPIC, "partitions": 3, "replication_factor": 3,
                    "config": {"min.insync.replicas": "2"}}],
        "users": [{"name": CONSUMER, "password": {"env": PASSWORD_ENV}}],
        "acls": [{"principal": f"User:{CONSUMER}", "resource": {"type": "topic", "name": TOPIC},
                  "operations": ["read", "describe"]},
                 {"principal": f"User:{CONSUMER}", "resource": {"type": "group", "name": CONSUMER,
                                                                 "pattern": "prefixed"}, "operations": ["read"]},
                 # A consumer group the specs name: `status` reports its lag from its committed offsets.
                 {"principal": f"User:{CONSUMER}", "resource": {"type": "group", "name": GROUP},
                  "operations": ["read"]}],
        "consumers": [{"name": CONSUMER, "topics": [TOPIC], "user": CONSUMER, "profile": "latency",
                       "starting_offsets": "earliest", "trigger": "1s", "query": "SELECT value FROM input",
                       "sink": {"type": "noop"}}],
    }
    for section, items in sections.items():
        (specs / f"{section}.yaml").write_text(yaml.safe_dump({section: items}))


@pytest.fixture(scope="module")
def monitored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Monitored]:
    base = tmp_path_factory.mktemp("monitoring")
    with own_cluster(base, "local", quick_start=False, name="kfmon") as cluster:
        _write_specs(cluster.specs)
        env = {**os.environ, PASSWORD_ENV: "mon-scorer-secret-1", "PYTHONUNBUFFERED": "1"}
        watched = Monitored(cluster, base / "data", env)
        done = watched.kraftform("apply", str(cluster.specs), "--state-dir", str(cluster.state), "--auto-approve")
        assert done.returncode == 0, done.stdout + done.stderr
        done = watched.kraftform("monitoring", "up", str(cluster.specs), "--state-dir", str(cluster.state),
                                 "--data-dir", str(watched.data_dir), "--scrape-interval", str(INTERVAL),
                                 "--max-for", str(MAX_FOR_S))
        assert done.returncode == 0, done.stdout + done.stderr
        try:
            yield watched
        finally:
            watched.kraftform("monitoring", "down", "--state-dir", str(cluster.state))


def _consume_and_commit(client: dict[str, Any], count: int) -> None:
    """Read `count` records as the declared group and commit: its lag is then what is produced after."""
    consumer = Consumer({**client, "group.id": GROUP, "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([TOPIC])
    read = 0
    deadline = time.monotonic() + 60
    while read < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            read += 1
    consumer.commit(asynchronous=False)
    consumer.close()
    assert read == count


def _wait(what: str, timeout: float, check: Any) -> float:
    """Seconds until `check()` is truthy; fails the test naming `what` after `timeout`."""
    started = time.monotonic()
    while True:
        try:
            if check():
                return time.monotonic() - started
        except (TimeoutError, urllib.error.URLError):
            pass  # Prometheus slow to answer one query on a busy machine (CI: 10 s once): asked again
        assert time.monotonic() - started < timeout, f"{what}: not within {timeout:.0f} s"
        time.sleep(0.5)


def _first_scrape(address: str) -> str:
    """A node's metrics page, read as a scraper reads it: again after a timeout. The agent's first collection of
    a JVM started moments ago walks every MBean; on 2 cores under the rest of the suite one took more than 10 s
    (ci14), and Prometheus itself simply scrapes again at its next interval."""
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"http://{address}/metrics", timeout=30) as response:
                return str(response.read().decode())
        except OSError:  # a timeout, a refused or reset connection
            if time.monotonic() > deadline:
                raise
            time.sleep(1)


def test_every_node_is_scraped_and_the_course_metrics_read_healthy(monitored: Monitored) -> None:
    endpoints = json.loads((monitored.cluster.state / "metrics.json").read_text())
    assert len(endpoints) == 6
    for endpoint in endpoints:  # each node's own endpoint, as any scraper would read it
        text = _first_scrape(endpoint["address"])
        family = "kafka_server_under_replicated_partitions" if "broker" in endpoint["roles"] else \
            "kafka_controller_active"
        assert f"\n{family} " in text, (endpoint, text[:500])
        assert "password" not in text.lower() and "BEGIN" not in text
    _wait("every node scraped", 60, lambda: len([r for r in monitored.query('up{job="kafka"} == 1')]) == 6)
    assert monitored.value('sum(kafka_server_under_replicated_partitions{cluster="kfmon"})') == 0
    assert monitored.value('sum(kafka_controller_active{cluster="kfmon"})') == 1
    assert monitored.value('max(kafka_controller_offline_partitions{cluster="kfmon"})') == 0
    assert monitored.value('max(kafka_controller_active_brokers{cluster="kfmon"})') == 3
    leaders = {r["value"][1] for r in monitored.query('kafka_raft_current_leader{role="controller"}')}
    assert len(leaders) == 1 and float(leaders.pop()) > 1000  # every controller knows the same leader
    _wait("kraftform's exporter scraped", 30, lambda: monitored.query("kraftform_status_healthy == 1"))
    done = monitored.status()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cluster kfmon: healthy" in done.stdout
    assert monitored.firing() == set()


def test_a_killed_broker_shows_in_status_within_15_s_and_fires_the_alert_until_it_is_back(
        monitored: Monitored) -> None:
    runtime = monitored.cluster.runtime
    killed = time.monotonic()
    runtime.kill_node("kfmon-broker-1")
    outcome: list[subprocess.CompletedProcess[str]] = []

    def status_says_so() -> bool:
        outcome.append(monitored.status())
        print(f"{time.monotonic() - killed:.1f} s: exit {outcome[-1].returncode}: {outcome[-1].stdout[-600:]}"
              f"{outcome[-1].stderr[-600:]}")
        return outcome[-1].returncode == 2 and f"topic {TOPIC}" in outcome[-1].stdout
    seen = _wait("status naming the under-replicated topic", 15, status_says_so)
    assert "under-replicated" in outcome[-1].stdout and "kfmon-broker-1" in outcome[-1].stdout, outcome[-1].stdout
    print(f"status exit 2 naming {TOPIC} {seen:.1f} s after the SIGKILL")
    _wait("UnderReplicatedPartitions firing", 120,
          lambda: any(name == "UnderReplicatedPartitions" for name, _ in monitored.firing()))
    print(f"UnderReplicatedPartitions firing {time.monotonic() - killed:.1f} s after the SIGKILL")
    _wait("KafkaNodeDown firing", 60, lambda: ("KafkaNodeDown", "kfmon-broker-1") in monitored.firing())
    firing = monitored.firing()  # both, at once, while the broker is down
    assert ("KafkaNodeDown", "kfmon-broker-1") in firing and \
        any(name == "UnderReplicatedPartitions" for name, _ in firing), firing

    runtime.start_node("kfmon-broker-1")
    _wait("status healthy again", 180, lambda: monitored.status().returncode == 0)
    _wait("the alerts clear", 120, lambda: not {n for n, _ in monitored.firing()} &
          {"UnderReplicatedPartitions", "KafkaNodeDown"})


def test_a_stopped_consumer_lags_in_status_and_the_alert_and_every_dashboard_panel_has_series(
        monitored: Monitored) -> None:
    connection = admin_config(monitored.cluster.state)
    produce_paced(connection, ((TOPIC, None, f"r{i}") for i in range(500)), rate=1e9, count=None)
    _consume_and_commit(connection.librdkafka(), 500)
    job = subprocess.Popen([sys.executable, "-m", "kraftform", "consumers", "run", CONSUMER,
                            str(monitored.cluster.specs), "--state-dir", str(monitored.cluster.state),
                            "--data-dir", str(monitored.data_dir)], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, env=monitored.env, start_new_session=True)
    try:
        _wait("the consumer's driver scraped", 180, lambda: monitored.query('up{job="spark"} == 1'))
        _wait("the consumer caught up", 180, lambda: monitored.query(
            f'kraftform_consumer_lag_records{{consumer="{CONSUMER}"}} == 0'))
        empty = [title for title, expr, _, _ in panels("kfmon") if not monitored.query(expr)]
        assert empty == [], f"dashboard panels without series: {empty}"
    except AssertionError as failure:
        os.killpg(job.pid, signal.SIGTERM)
        output, _ = job.communicate(timeout=120)
        exporter = (monitored.cluster.state / "monitoring" / "exporter.log").read_text()[-2000:]
        raise AssertionError(f"{failure}\nconsumer:\n{output[-3000:]}\nexporter:\n{exporter}\nstatus:\n"
                             f"{monitored.status().stdout}") from None
    os.killpg(job.pid, signal.SIGTERM)
    output, _ = job.communicate(timeout=120)
    assert job.returncode == 0, output[-3000:]

    produce_paced(connection, ((TOPIC, None, f"late{i}") for i in range(3000)), rate=1e9, count=None)
    done = monitored.status()
    assert done.returncode == 2, done.stdout
    assert f"Spark consumer {CONSUMER} is 3,000 records behind" in done.stdout, done.stdout
    assert f"consumer group {GROUP}: lag 3,000 records (limit 10,000)" in done.stdout, done.stdout
    waited = _wait("ConsumerLag firing", 150, lambda: ("ConsumerLag", CONSUMER) in monitored.firing())
    print(f"ConsumerLag firing {waited:.1f} s after the records were produced (its rule's for: 1m, capped at "
          f"{MAX_FOR_S} s)")
