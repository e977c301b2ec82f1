"""Prometheus' configuration for one cluster: every node's JMX exporter, kraftform's exporter, the Spark
consumers that announce themselves, and the generated rules. Pure.

Every target carries `cluster`, `node` and `role` labels, which the alert rules and the dashboard select on, and a
node on one of the spec's hosts its `host`.
Spark consumers are found through files (`file_sd_configs`): each `kraftform consumers run` writes where its
driver serves metrics when it starts, so a consumer started after Prometheus is scraped without a reload.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kraftform.monitoring.alerts import KAFKA_JOB, KRAFTFORM_JOB

SPARK_JOB = "spark"
#: Where Spark's PrometheusServlet serves the driver's metrics (streaming queries included).
SPARK_METRICS_PATH = "/metrics/prometheus"


@dataclass(frozen=True)
class Endpoint:
    node: str
    roles: str  # "broker", "controller" or "broker,controller"
    address: str  # host:port
    #: The spec host (`cluster.hosts`) running the node; "" on one machine.
    host: str = ""

    @property
    def role(self) -> str:
        """`controller` for any node in the quorum (the quorum alerts select it), else `broker`."""
        return "controller" if "controller" in self.roles.split(",") else "broker"


def prometheus_config(cluster: str, nodes: Sequence[Endpoint], exporter: str, rules_file: str,
                      spark_targets_glob: str, interval_s: float) -> dict[str, Any]:
    interval = f"{interval_s:g}s"
    return {
        "global": {"scrape_interval": interval, "evaluation_interval": interval,
                   "external_labels": {"kraftform_cluster": cluster}},
        "rule_files": [rules_file],
        "scrape_configs": [
            {"job_name": KAFKA_JOB, "static_configs": [
                {"targets": [n.address], "labels": {"cluster": cluster, "node": n.node, "role": n.role,
                                                    **({"host": n.host} if n.host else {})}}
                for n in nodes]},
            {"job_name": KRAFTFORM_JOB, "static_configs": [
                {"targets": [exporter], "labels": {"cluster": cluster, "node": "kraftform", "role": "exporter"}}]},
            {"job_name": SPARK_JOB, "metrics_path": SPARK_METRICS_PATH,
             "file_sd_configs": [{"files": [spark_targets_glob], "refresh_interval": interval}],
             "relabel_configs": [{"target_label": "cluster", "replacement": cluster}]},
        ],
    }


def spark_target(consumer: str, address: str) -> list[dict[str, Any]]:
    """What a running consumer writes for `file_sd_configs`: where its driver's metrics are (the scrape
    configuration adds the cluster's label)."""
    return [{"targets": [address], "labels": {"node": consumer, "role": "spark", "consumer": consumer}}]
