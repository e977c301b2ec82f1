"""A Grafana dashboard of the course's metrics for one cluster. Pure.

Each panel's query selects the cluster by the label the scrape configuration gives every target, so one
Prometheus can watch several clusters; the datasource is an import-time input (`DS_PROMETHEUS`), as dashboards
shared on grafana.com declare it. Every query is run against a real Prometheus in the tests.
"""

from __future__ import annotations

from typing import Any

from kraftform.specset.model import SpecSet

#: Spark's streaming gauges (PrometheusServlet, namespace `kraftform`): one per query, named after it.
SPARK_STREAMING = 'metrics_kraftform_driver_spark_streaming_.+_{}_Value'


def panels(cluster: str) -> list[tuple[str, str, str, str]]:
    """(title, PromQL, legend, unit) per panel."""
    c = f'cluster="{cluster}"'
    return [
        ("Under-replicated partitions", f"sum by (node) (kafka_server_under_replicated_partitions{{{c}}})",
         "{{node}}", "short"),
        ("Partitions under min.insync.replicas", f"sum by (node) (kafka_server_under_min_isr_partitions{{{c}}})",
         "{{node}}", "short"),
        ("Offline partitions", f"max(kafka_controller_offline_partitions{{{c}}})", "offline", "short"),
        ("Active controllers", f"sum(kafka_controller_active{{{c}}})", "active", "short"),
        ("Brokers registered (controller's view)", f"max(kafka_controller_active_brokers{{{c}}})", "active", "short"),
        ("Records in per topic", f'sum by (topic) (rate(kafka_server_messages_in_total{{{c}, topic!=""}}[1m]))',
         "{{topic}}", "ops"),
        ("Bytes in / out", f'sum(rate(kafka_server_bytes_in_total{{{c}, topic=""}}[1m]))', "in", "Bps"),
        ("Requests per second by type", f"sum by (request) (rate(kafka_network_requests_total{{{c}}}[1m]))",
         "{{request}}", "reqps"),
        ("Failed produce and fetch requests",
         f"sum(rate(kafka_server_failed_produce_requests_total{{{c}}}[1m])) + "
         f"sum(rate(kafka_server_failed_fetch_requests_total{{{c}}}[1m]))", "failed", "reqps"),
        ("Replica max lag", f"max by (node) (kafka_server_replica_max_lag{{{c}}})", "{{node}}", "short"),
        ("ISR shrinks and expands", f"sum(rate(kafka_server_isr_shrinks_total{{{c}}}[5m])) - "
                                    f"sum(rate(kafka_server_isr_expands_total{{{c}}}[5m]))", "shrinks - expands",
         "short"),
        ("Request handler idle", f"avg by (node) (kafka_server_request_handler_idle_ratio{{{c}}})", "{{node}}",
         "percentunit"),
        ("Controller quorum: leader per controller", f'kafka_raft_current_leader{{{c}, role="controller"}}',
         "{{node}}", "short"),
        ("Controller quorum: metadata log end", f'kafka_raft_log_end_offset{{{c}, role="controller"}}', "{{node}}",
         "short"),
        ("JVM heap used", f'jvm_memory_bytes_used{{{c}, area="heap"}}', "{{node}}", "bytes"),
        ("Consumer lag", f"kraftform_consumer_lag_records{{{c}}}", "{{consumer}}", "short"),
        ("Spark input rate", f'{{__name__=~"{SPARK_STREAMING.format("inputRate_total")}", {c}}}', "{{consumer}}",
         "ops"),
        ("Spark processing rate", f'{{__name__=~"{SPARK_STREAMING.format("processingRate_total")}", {c}}}',
         "{{consumer}}", "ops"),
        ("Spark batch duration", f'{{__name__=~"{SPARK_STREAMING.format("latency")}", {c}}}', "{{consumer}}",
         "ms"),
    ]


def dashboard(specs: SpecSet) -> dict[str, Any]:
    cluster = specs.cluster.name
    source = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
    items = []
    for i, (title, expr, legend, unit) in enumerate(panels(cluster)):
        items.append({
            "id": i + 1, "type": "timeseries", "title": title, "datasource": source,
            "gridPos": {"h": 8, "w": 8, "x": (i % 3) * 8, "y": (i // 3) * 8},
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "targets": [{"refId": "A", "expr": expr, "legendFormat": legend, "datasource": source}],
        })
    return {
        "__inputs": [{"name": "DS_PROMETHEUS", "label": "Prometheus", "type": "datasource",
                      "pluginId": "prometheus", "pluginName": "Prometheus"}],
        "title": f"Kafka cluster {cluster} (kraftform)", "uid": f"kraftform-{cluster}"[:40],
        "tags": ["kafka", "kraftform"], "timezone": "utc", "schemaVersion": 39, "refresh": "10s",
        "time": {"from": "now-1h", "to": "now"}, "panels": items,
    }
