"""Prometheus alert rules generated from the specs. Pure.

The course's alerts (under-replicated and offline partitions, one active controller, replica lag, ISR churn,
request rates, producer errors, consumer lag), Strimzi's where they add (under-min-ISR, offline log
directories, certificate expiry), and the controller quorum's health (no leader, a voter falling behind), which
Strimzi's rules lack although KRaft exports the raft metrics. Every expression reads a family that
`cluster.jmx` or kraftform's exporter (`runtime.observation.exporter`) guarantees, with the labels the scrape
configuration (`monitoring.scrape`) puts on every target: `cluster`, `node`, `role`.

Consumer lag gets one rule per declared consumer with the limit of its profile, so a review of the specs shows
the alert a new pipeline brings.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from kraftform.monitoring.status import DEFAULT_LAG_LIMIT, lag_limit
from kraftform.specset.model import SpecSet
from kraftform.units import parse_duration_ms

#: The scrape jobs (`monitoring.scrape`): every Kafka node, kraftform's exporter.
KAFKA_JOB, KRAFTFORM_JOB = "kafka", "kraftform"
#: How long a voter's metadata log may trail the leader's before it is "behind", in records.
VOTER_BEHIND_RECORDS = 1_000
#: Warn this many days before a certificate kraftform made ends; critical at a week.
CERT_WARNING_DAYS, CERT_CRITICAL_DAYS = 30, 7


@dataclass(frozen=True)
class Alert:
    name: str
    expr: str
    for_: str
    severity: str
    summary: str
    labels: tuple[tuple[str, str], ...] = ()

    def rule(self, cluster: str, max_for_s: int | None = None) -> dict[str, Any]:
        for_ = self.for_
        if max_for_s is not None and parse_duration_ms(for_) > max_for_s * 1000:
            for_ = f"{max_for_s}s"
        return {"alert": self.name, "expr": self.expr, "for": for_,
                "labels": {"severity": self.severity, "cluster": cluster, **dict(self.labels)},
                "annotations": {"summary": self.summary}}


def _kafka_alerts(c: str) -> list[Alert]:
    sel = f'cluster="{c}"'

    def produce(offset: str = "") -> str:
        return f'sum by (cluster) (rate(kafka_network_requests_total{{{sel}, request="Produce"}}[5m]{offset}))'

    return [
        Alert("KafkaNodeDown", f'up{{job="{KAFKA_JOB}", {sel}}} == 0', "30s", "critical",
              "{{ $labels.role }} {{ $labels.node }} of cluster {{ $labels.cluster }} does not answer scrapes"),
        Alert("UnderReplicatedPartitions", f"kafka_server_under_replicated_partitions{{{sel}}} > 0", "30s", "warning",
              "broker {{ $labels.node }} leads {{ $value }} under-replicated partition(s)"),
        Alert("UnderMinIsrPartitions", f"kafka_server_under_min_isr_partitions{{{sel}}} > 0", "0s", "critical",
              "broker {{ $labels.node }} leads {{ $value }} partition(s) below min.insync.replicas: "
              "acks=all producers are refused"),
        Alert("OfflinePartitions", f"max by (cluster) (kafka_controller_offline_partitions{{{sel}}}) > 0", "0s",
              "critical", "{{ $value }} partition(s) have no leader in cluster {{ $labels.cluster }}"),
        Alert("ActiveControllerCount", f'sum by (cluster) (kafka_controller_active{{{sel}, role="controller"}}) != 1',
              "30s", "critical", "cluster {{ $labels.cluster }} has {{ $value }} active controllers (should be 1)"),
        Alert("OfflineLogDirectories", f"kafka_log_offline_log_directories{{{sel}}} > 0", "0s", "critical",
              "{{ $labels.node }} has {{ $value }} offline log director(ies)"),
        Alert("ReplicaMaxLag", f"kafka_server_replica_max_lag{{{sel}}} > 10000", "2m", "warning",
              "follower replicas on broker {{ $labels.node }} are {{ $value }} records behind"),
        Alert("IsrChurn", f"increase(kafka_server_isr_shrinks_total{{{sel}}}[15m]) > 0 and "
                          f"increase(kafka_server_isr_expands_total{{{sel}}}[15m]) > 0", "0s", "warning",
              "ISRs on broker {{ $labels.node }} keep shrinking and expanding: a replica flaps"),
        Alert("ProduceRequestsDropped", f"{produce()} < 0.5 * {produce(' offset 1h')}", "10m", "warning",
              "produce requests to {{ $labels.cluster }} fell by more than half within the hour"),
        Alert("ProduceErrors",
              f"sum by (cluster, node) (rate(kafka_server_failed_produce_requests_total{{{sel}}}[5m])) > 0", "5m",
              "warning", "broker {{ $labels.node }} fails produce requests"),
        Alert("RequestErrors", f'sum by (cluster, node, request, error) (rate(kafka_network_errors_total{{{sel}, '
                               f'error!="NONE", request=~"Produce|Fetch"}}[5m])) > 1', "5m", "warning",
              "{{ $labels.node }} answers {{ $labels.request }} with {{ $labels.error }} ({{ $value }}/s)"),
    ]


def _host_alerts(specs: SpecSet) -> list[Alert]:
    """On a cluster spread over hosts (`cluster.hosts`): every node of one host silent at once is the host or its link
    lost, not a node's own failure, and takes a replica of each partition and a voter with it."""
    if not specs.cluster.hosts:
        return []
    return [Alert("KafkaHostLost", f'max by (cluster, host) (up{{job="{KAFKA_JOB}", cluster="{specs.cluster.name}", '
                                   f'host!=""}}) == 0', "30s", "critical",
                  "host {{ $labels.host }} of cluster {{ $labels.cluster }} is lost: none of its nodes answer "
                  "scrapes (its machine, its Docker engine or its link is down)")]


def _quorum_alerts(c: str) -> list[Alert]:
    sel = f'cluster="{c}", role="controller"'
    return [
        Alert("ControllerQuorumNoLeader", f"kafka_raft_current_leader{{{sel}}} < 0", "30s", "critical",
              "controller {{ $labels.node }} sees no quorum leader: metadata cannot change"),
        Alert("ControllerVoterBehind", f"max by (cluster) (kafka_raft_log_end_offset{{{sel}}}) - on (cluster) "
                                       f"group_right kafka_raft_log_end_offset{{{sel}}} > {VOTER_BEHIND_RECORDS}",
              "1m", "warning", "controller {{ $labels.node }}'s metadata log is {{ $value }} records behind"),
        Alert("MetadataApplyLag", f'kafka_metadata_last_applied_record_lag_ms{{cluster="{c}"}} > 30000', "1m",
              "warning", "{{ $labels.node }} applies metadata {{ $value }} ms late"),
    ]


def _kraftform_alerts(specs: SpecSet) -> list[Alert]:
    c = specs.cluster.name
    sel = f'cluster="{c}"'
    alerts = [
        Alert("KraftformExporterDown", f'up{{job="{KRAFTFORM_JOB}", {sel}}} == 0', "1m", "warning",
              "kraftform's exporter for {{ $labels.cluster }} does not answer: consumer lag is not watched"),
        Alert("CertificateExpiresSoon", f"kraftform_certificate_expiry_timestamp_seconds{{{sel}}} - time() < "
                                        f"{CERT_WARNING_DAYS} * 86400", "0s", "warning",
              "certificate {{ $labels.certificate }} ends in less than 30 days"),
        Alert("CertificateExpiresVerySoon", f"kraftform_certificate_expiry_timestamp_seconds{{{sel}}} - time() < "
                                            f"{CERT_CRITICAL_DAYS} * 86400", "0s", "critical",
              "certificate {{ $labels.certificate }} ends in less than 7 days"),
    ]
    limits = {c.name: (lag_limit(c.profile), c.profile) for c in specs.consumers}
    for name, (limit, profile) in sorted(limits.items()):
        alerts.append(Alert("ConsumerLag", f'kraftform_consumer_lag_records{{{sel}, consumer="{name}"}} > {limit}',
                            "1m", "warning", f"Spark consumer {name} is {{{{ $value }}}} records behind (its "
                                             f"{profile} profile allows {limit:,})",
                            (("consumer", name), ("kind", "spark"))))
    alerts.append(Alert("ConsumerLag", f'kraftform_consumer_lag_records{{{sel}, kind="group"}} > '
                                       f"{DEFAULT_LAG_LIMIT}", "1m", "warning",
                        f"consumer group {{{{ $labels.consumer }}}} is {{{{ $value }}}} records behind (limit "
                        f"{DEFAULT_LAG_LIMIT:,})", (("kind", "group"),)))
    alerts.append(Alert("ConsumerLag", f'kraftform_consumer_lag_records{{{sel}, kind="share"}} > '
                                       f"{DEFAULT_LAG_LIMIT}", "1m", "warning",
                        f"share group {{{{ $labels.consumer }}}} has {{{{ $value }}}} records not acknowledged "
                        f"(limit {DEFAULT_LAG_LIMIT:,})", (("kind", "share"),)))
    for connect in specs.connect:
        of = f'{{{sel}, connect="{connect.name}"}}'
        alerts.append(Alert("ConnectorTaskFailed", f"kraftform_connector_failed_tasks{of} > 0", "1m", "critical",
                            "connector {{ $labels.connector }} of Connect cluster {{ $labels.connect }} has "
                            "{{ $value }} failed task(s): `kraftform connect status` shows the trace",
                            (("connect", connect.name),)))
        alerts.append(Alert("ConnectorNotAsDeclared", f"kraftform_connector_as_declared{of} == 0", "5m", "warning",
                            "connector {{ $labels.connector }} of Connect cluster {{ $labels.connect }} is not in its "
                            "declared state", (("connect", connect.name),)))
    return alerts


def alert_rules(specs: SpecSet, max_for_s: int | None = None) -> dict[str, Any]:
    """The rules; `max_for_s` caps every `for:` (a trial of the alerts that need not wait their production
    durations), None keeps each rule's own."""
    c = specs.cluster.name
    return {"groups": [
        {"name": f"kraftform-{c}-kafka", "rules": [a.rule(c, max_for_s) for a in
                                                    (*_kafka_alerts(c), *_host_alerts(specs))]},
        {"name": f"kraftform-{c}-quorum", "rules": [a.rule(c, max_for_s) for a in _quorum_alerts(c)]},
        {"name": f"kraftform-{c}-kraftform", "rules": [a.rule(c, max_for_s) for a in _kraftform_alerts(specs)]},
    ]}


def rules_yaml(specs: SpecSet, max_for_s: int | None = None) -> str:
    header = (f"# Prometheus alert rules for Kafka cluster {specs.cluster.name}, generated by `kraftform monitoring "
              f"rules` from its specs. Do not edit; change the specs.\n")
    if max_for_s is not None:
        header += f"# Every `for:` capped at {max_for_s}s (`monitoring up --max-for`): a trial, not production.\n"
    return header + yaml.safe_dump(alert_rules(specs, max_for_s), sort_keys=False, width=1000)
