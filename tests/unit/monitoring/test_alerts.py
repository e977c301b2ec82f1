"""The generated alert rules, checked and unit-tested by Prometheus' own promtool against series that break
each rule's condition (and series that do not)."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
from pathlib import Path

import yaml

from kraftform.cluster.jmx import FAMILIES
from kraftform.declared import load_specs
from kraftform.monitoring.alerts import alert_rules, rules_yaml
from kraftform.monitoring.dashboard import panels
from kraftform.specset.model import Host

from ...conftest import EXAMPLE_SPECS

SPECS = load_specs(EXAMPLE_SPECS)
KRAFTFORM_FAMILIES = {"kraftform_consumer_lag_records", "kraftform_certificate_expiry_timestamp_seconds", "up"}


def _promtool(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    promtool = shutil.which("promtool")
    assert promtool, "promtool (Debian's prometheus package) is installed by scripts/setup"
    return subprocess.run([promtool, *args], capture_output=True, text=True, cwd=cwd, check=False)


def test_promtool_accepts_the_rules(tmp_path: Path) -> None:
    (tmp_path / "rules.yml").write_text(rules_yaml(SPECS))
    done = _promtool("check", "rules", "rules.yml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


def test_every_expression_reads_a_family_the_exporters_produce() -> None:
    exprs = [r["expr"] for g in alert_rules(SPECS)["groups"] for r in g["rules"]]
    exprs += [expr for _, expr, _, _ in panels(SPECS.cluster.name)]
    names = {n for e in exprs for n in re.findall(r"\b((?:kafka|kraftform)_[a-z_]+|up)\{", e)}
    assert names, exprs
    assert names - set(FAMILIES) - KRAFTFORM_FAMILIES == set()


def test_each_declared_consumer_gets_a_lag_alert_with_its_profile_limit() -> None:
    lag = {r["labels"].get("consumer"): r["expr"] for g in alert_rules(SPECS)["groups"] for r in g["rules"]
           if r["alert"] == "ConsumerLag"}
    assert lag["fraud-scoring"].endswith("> 10000")  # durability
    assert lag["clickstream-sessionizer"].endswith("> 100000")  # throughput
    assert set(lag) == {c.name for c in SPECS.consumers} | {None}  # and one for consumer groups


def _series(name: str, labels: dict[str, str], values: str) -> dict[str, str]:
    text = ", ".join(f'{k}="{v}"' for k, v in {"cluster": "platform", **labels}.items())
    return {"series": f"{name}{{{text}}}", "values": values}


def _alert(name: str, at: str, labels: dict[str, str] | None = None, summary: str = "") -> dict[str, object]:
    """The alert firing at `at` with these labels and summary; not firing when no summary is given."""
    expected: list[dict[str, object]] = []
    if summary:
        expected = [{"exp_labels": {"cluster": "platform", **(labels or {})}, "exp_annotations": {"summary": summary}}]
    return {"eval_time": at, "alertname": name, "exp_alerts": expected}


def test_promtool_fires_each_alert_on_series_that_break_its_condition(tmp_path: Path) -> None:
    """Each case: series as the exporters write them, and whether the alert fires at a time (for: included)."""
    broker = {"job": "kafka", "node": "platform-broker-1", "role": "broker"}
    controllers = [{"job": "kafka", "node": f"platform-controller-{i}", "role": "controller"} for i in range(3)]
    exporter = {"job": "kraftform", "node": "kraftform", "role": "exporter"}
    series = [
        _series("kafka_server_under_replicated_partitions", broker, "0 0 3 3 3 3 3"),
        _series("kafka_server_under_min_isr_partitions", broker, "0 1 1"),
        *[_series(name, c, v) for name, values in (("kafka_controller_active", ("1x6", "0 0 1 1 1 1 1", "0x6")),
                                                   ("kafka_raft_current_leader", ("1001x6", "1001x6", "-1x6")),
                                                   ("kafka_raft_log_end_offset", ("5000x6", "4990x6", "100x6")))
          for c, v in zip(controllers, values, strict=True)],
        _series("kraftform_consumer_lag_records", {**exporter, "consumer": "fraud-scoring", "kind": "spark"},
                "20000x6"),
        _series("kraftform_consumer_lag_records", {**exporter, "consumer": "clickstream-sessionizer",
                                                   "kind": "spark"}, "20000x6"),
        _series("kraftform_certificate_expiry_timestamp_seconds", {**exporter, "certificate": "ca"},
                f"{20 * 86400}x6"),
    ]
    behind = controllers[2]
    alerts = [
        _alert("UnderReplicatedPartitions", "40s"),  # above 0 for 20 s only: its for is 30 s
        _alert("UnderReplicatedPartitions", "60s", {**broker, "severity": "warning"},
               "broker platform-broker-1 leads 3 under-replicated partition(s)"),
        _alert("UnderMinIsrPartitions", "20s", {**broker, "severity": "critical"},
               "broker platform-broker-1 leads 1 partition(s) below min.insync.replicas: acks=all producers are "
               "refused"),
        _alert("ActiveControllerCount", "10s"),
        _alert("ActiveControllerCount", "60s", {"severity": "critical"},  # two active from 20 s
               "cluster platform has 2 active controllers (should be 1)"),
        _alert("ControllerQuorumNoLeader", "40s", {**behind, "severity": "critical"},
               "controller platform-controller-2 sees no quorum leader: metadata cannot change"),
        _alert("ControllerVoterBehind", "70s", {**behind, "severity": "warning"},
               "controller platform-controller-2's metadata log is 4900 records behind"),
        # 20,000 records is above durability's 10,000 (fraud-scoring), not throughput's 100,000 (sessionizer).
        _alert("ConsumerLag", "70s", {**exporter, "consumer": "fraud-scoring", "kind": "spark", "severity": "warning"},
               "Spark consumer fraud-scoring is 20000 records behind (its durability profile allows 10,000)"),
        _alert("CertificateExpiresSoon", "10s", {**exporter, "certificate": "ca", "severity": "warning"},
               "certificate ca ends in less than 30 days"),
        _alert("CertificateExpiresVerySoon", "10s"),
    ]
    (tmp_path / "rules.yml").write_text(rules_yaml(SPECS))
    (tmp_path / "test.yml").write_text(yaml.safe_dump({
        "rule_files": ["rules.yml"], "evaluation_interval": "10s",
        "tests": [{"interval": "10s", "input_series": series, "alert_rule_test": alerts}]}))
    done = _promtool("test", "rules", "test.yml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_connector_whose_task_failed_for_a_minute_fires_and_one_as_declared_does_not(tmp_path: Path) -> None:
    specs = load_specs(Path(__file__).resolve().parents[2] / "example_project" / "specs")  # shop-connect
    rules = rules_yaml(specs)
    assert "kraftform_connector_failed_tasks" in rules and "kraftform_connector_as_declared" in rules
    exporter = {"job": "kraftform", "node": "kraftform", "role": "exporter", "cluster": "shop",
                "connect": "shop-connect", "connector": "orders-archive"}

    text = ", ".join(f'{k}="{v}"' for k, v in exporter.items())

    def series(name: str, values: str) -> dict[str, str]:
        return {"series": f"{name}{{{text}}}", "values": values}

    alerts = [
        {"eval_time": "60s", "alertname": "ConnectorTaskFailed", "exp_alerts": []},  # failed for 40 s only
        {"eval_time": "90s", "alertname": "ConnectorTaskFailed", "exp_alerts": [{
            "exp_labels": {**exporter, "severity": "critical"},
            "exp_annotations": {"summary": "connector orders-archive of Connect cluster shop-connect has 1 failed "
                                           "task(s): `kraftform connect status` shows the trace"}}]},
        {"eval_time": "90s", "alertname": "ConnectorNotAsDeclared", "exp_alerts": []},
    ]
    (tmp_path / "rules.yml").write_text(rules)
    (tmp_path / "test.yml").write_text(yaml.safe_dump({
        "rule_files": ["rules.yml"], "evaluation_interval": "10s",
        "tests": [{"interval": "10s", "input_series": [series("kraftform_connector_failed_tasks", "0 0 1x9"),
                                                       series("kraftform_connector_as_declared", "1x11")],
                   "alert_rule_test": alerts}]}))
    done = _promtool("test", "rules", "test.yml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_trials_cap_shortens_only_the_waits_above_it_and_promtool_accepts_the_result(tmp_path: Path) -> None:
    def waits(rules: dict[str, object]) -> dict[str, str]:
        return {r["alert"] + str(r["labels"].get("consumer", "")): r["for"]
                for g in rules["groups"] for r in g["rules"]}  # type: ignore[attr-defined]

    own, capped = waits(alert_rules(SPECS)), waits(alert_rules(SPECS, max_for_s=10))
    assert own["ConsumerLag"] == "1m" and capped["ConsumerLag"] == "10s"
    assert own["ProduceRequestsDropped"] == "10m" and capped["ProduceRequestsDropped"] == "10s"
    assert own["UnderMinIsrPartitions"] == capped["UnderMinIsrPartitions"] == "0s"  # below the cap: kept
    assert set(own) == set(capped)
    text = rules_yaml(SPECS, max_for_s=10)
    assert "capped at 10s" in text and "capped" not in rules_yaml(SPECS)
    (tmp_path / "rules.yml").write_text(text)
    done = _promtool("check", "rules", "rules.yml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_host_fires_when_every_node_on_it_is_silent_not_when_one_is(tmp_path: Path) -> None:
    hosts = tuple(Host(name, f"unix:///run/{name}.sock", f"10.0.0.{i}") for i, name in enumerate("ab", 1))
    specs = dataclasses.replace(SPECS, cluster=dataclasses.replace(SPECS.cluster, hosts=hosts))
    assert "KafkaHostLost" not in rules_yaml(SPECS)  # one machine: no host to lose

    def up(node: str, host: str, values: str) -> dict[str, str]:
        return _series("up", {"job": "kafka", "node": node, "role": "broker", "host": host}, values)

    series = [up("platform-broker-0", "a", "1 0x6"), up("platform-controller-0", "a", "1 1 0x5"),
              up("platform-broker-1", "b", "0x6"), up("platform-controller-1", "b", "1x6")]
    (tmp_path / "rules.yml").write_text(rules_yaml(specs))
    (tmp_path / "test.yml").write_text(yaml.safe_dump({
        "rule_files": ["rules.yml"], "evaluation_interval": "10s",
        "tests": [{"interval": "10s", "input_series": series, "alert_rule_test": [
            _alert("KafkaHostLost", "30s"),  # both of a's nodes silent since 20 s: its for is 30 s
            _alert("KafkaHostLost", "50s", {"host": "a", "severity": "critical"},
                   "host a of cluster platform is lost: none of its nodes answer scrapes (its machine, its Docker "
                   "engine or its link is down)")]}]}))
    done = _promtool("test", "rules", "test.yml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
