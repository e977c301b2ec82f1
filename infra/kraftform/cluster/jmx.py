"""What each Kafka node exposes to Prometheus, through the Prometheus JMX exporter java agent.

Only the MBeans the alerts and the dashboard read are queried (`includeObjectNames`): a Kafka broker registers
thousands (per topic, per partition, per client), and walking all of them on every scrape costs the node CPU
that the course's metrics do not need. Names are explicit, one rule per family, so the alert rules and the
dashboard refer to names this file guarantees (a unit test holds the three together).
"""

from __future__ import annotations

#: Where every node serves its metrics: the JMX exporter's customary port (Strimzi's too). Each local node has its
#: own loopback address and each container its own network address, so one port serves every node.
METRICS_PORT = 9404
METRICS_FILE = "metrics.yml"

#: The families the rules below produce, with what they mean; the alert rules and the dashboard use these names.
FAMILIES = {
    "kafka_server_under_replicated_partitions": "partitions this broker leads with an ISR smaller than its replicas",
    "kafka_server_under_min_isr_partitions": "partitions this broker leads whose ISR is below min.insync.replicas",
    "kafka_server_at_min_isr_partitions": "partitions this broker leads whose ISR is at min.insync.replicas",
    "kafka_server_offline_replicas": "replicas on this broker that are offline",
    "kafka_server_partitions": "partitions on this broker",
    "kafka_server_leaders": "partitions this broker leads",
    "kafka_server_isr_shrinks_total": "ISR shrinks on this broker",
    "kafka_server_isr_expands_total": "ISR expands on this broker",
    "kafka_server_replica_max_lag": "the largest lag, in records, of this broker's follower replicas",
    "kafka_server_messages_in_total": "records appended (label topic: per topic; without it: the broker's total)",
    "kafka_server_bytes_in_total": "bytes received from producers",
    "kafka_server_bytes_out_total": "bytes sent to consumers",
    "kafka_server_failed_produce_requests_total": "produce requests that failed",
    "kafka_server_failed_fetch_requests_total": "fetch requests that failed",
    "kafka_server_request_handler_idle_ratio": "the share of time request handler threads are idle",
    "kafka_network_requests_total": "requests by type (label request)",
    "kafka_network_errors_total": "error responses by request type and error",
    "kafka_log_offline_log_directories": "log directories this node could not use",
    "kafka_controller_active": "1 on the active controller, 0 elsewhere",
    "kafka_controller_offline_partitions": "partitions without a leader (the active controller reports them)",
    "kafka_controller_active_brokers": "brokers registered and not fenced (the active controller's view)",
    "kafka_controller_fenced_brokers": "brokers registered but fenced",
    "kafka_controller_global_partitions": "partitions in the cluster",
    "kafka_controller_preferred_replica_imbalance": "partitions not led by their preferred replica",
    "kafka_controller_metadata_errors_total": "errors applying metadata records",
    "kafka_raft_current_leader": "the quorum leader this node knows (-1: none)",
    "kafka_raft_current_epoch": "the quorum's epoch as this node knows it",
    "kafka_raft_high_watermark": "the metadata log's committed offset as this node knows it",
    "kafka_raft_log_end_offset": "the end of this node's metadata log",
    "kafka_raft_commit_latency_avg_ms": "average time to commit a metadata record",
    "kafka_metadata_last_applied_record_lag_ms": "how far this node's applied metadata is behind the newest record",
}

_INCLUDE = (
    "kafka.server:type=ReplicaManager,*",
    "kafka.server:type=ReplicaFetcherManager,name=MaxLag,*",
    "kafka.server:type=BrokerTopicMetrics,*",
    "kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent",
    "kafka.server:type=raft-metrics",
    "kafka.server:type=broker-metadata-metrics",
    "kafka.controller:type=KafkaController,*",
    "kafka.controller:type=ControllerEventManager,*",
    "kafka.network:type=RequestMetrics,name=RequestsPerSec,*",
    "kafka.network:type=RequestMetrics,name=ErrorsPerSec,*",
    "kafka.log:type=LogManager,name=OfflineLogDirectoryCount",
)

#: (pattern, name, type, labels): MBean attribute patterns as the exporter writes them
#: (`domain<key=value, ...><>attribute`).
_RULES: tuple[tuple[str, str, str, dict[str, str]], ...] = (
    ("kafka.server<type=ReplicaManager, name=UnderReplicatedPartitions><>Value",
     "kafka_server_under_replicated_partitions", "GAUGE", {}),
    ("kafka.server<type=ReplicaManager, name=UnderMinIsrPartitionCount><>Value",
     "kafka_server_under_min_isr_partitions", "GAUGE", {}),
    ("kafka.server<type=ReplicaManager, name=AtMinIsrPartitionCount><>Value",
     "kafka_server_at_min_isr_partitions", "GAUGE", {}),
    ("kafka.server<type=ReplicaManager, name=OfflineReplicaCount><>Value", "kafka_server_offline_replicas",
     "GAUGE", {}),
    ("kafka.server<type=ReplicaManager, name=PartitionCount><>Value", "kafka_server_partitions", "GAUGE", {}),
    ("kafka.server<type=ReplicaManager, name=LeaderCount><>Value", "kafka_server_leaders", "GAUGE", {}),
    ("kafka.server<type=ReplicaManager, name=IsrShrinksPerSec><>Count", "kafka_server_isr_shrinks_total",
     "COUNTER", {}),
    ("kafka.server<type=ReplicaManager, name=IsrExpandsPerSec><>Count", "kafka_server_isr_expands_total",
     "COUNTER", {}),
    ("kafka.server<type=ReplicaFetcherManager, name=MaxLag, clientId=Replica><>Value",
     "kafka_server_replica_max_lag", "GAUGE", {}),
    ("kafka.server<type=BrokerTopicMetrics, name=MessagesInPerSec, topic=(.+)><>Count",
     "kafka_server_messages_in_total", "COUNTER", {"topic": "$1"}),
    ("kafka.server<type=BrokerTopicMetrics, name=MessagesInPerSec><>Count", "kafka_server_messages_in_total",
     "COUNTER", {}),
    ("kafka.server<type=BrokerTopicMetrics, name=BytesInPerSec, topic=(.+)><>Count", "kafka_server_bytes_in_total",
     "COUNTER", {"topic": "$1"}),
    ("kafka.server<type=BrokerTopicMetrics, name=BytesInPerSec><>Count", "kafka_server_bytes_in_total",
     "COUNTER", {}),
    ("kafka.server<type=BrokerTopicMetrics, name=BytesOutPerSec, topic=(.+)><>Count",
     "kafka_server_bytes_out_total", "COUNTER", {"topic": "$1"}),
    ("kafka.server<type=BrokerTopicMetrics, name=BytesOutPerSec><>Count", "kafka_server_bytes_out_total",
     "COUNTER", {}),
    ("kafka.server<type=BrokerTopicMetrics, name=FailedProduceRequestsPerSec><>Count",
     "kafka_server_failed_produce_requests_total", "COUNTER", {}),
    ("kafka.server<type=BrokerTopicMetrics, name=FailedFetchRequestsPerSec><>Count",
     "kafka_server_failed_fetch_requests_total", "COUNTER", {}),
    ("kafka.server<type=KafkaRequestHandlerPool, name=RequestHandlerAvgIdlePercent><>OneMinuteRate",
     "kafka_server_request_handler_idle_ratio", "GAUGE", {}),
    ("kafka.network<type=RequestMetrics, name=RequestsPerSec, request=(\\w+), version=(\\d+)><>Count",
     "kafka_network_requests_total", "COUNTER", {"request": "$1", "version": "$2"}),
    ("kafka.network<type=RequestMetrics, name=ErrorsPerSec, request=(\\w+), error=(\\w+)><>Count",
     "kafka_network_errors_total", "COUNTER", {"request": "$1", "error": "$2"}),
    ("kafka.log<type=LogManager, name=OfflineLogDirectoryCount><>Value", "kafka_log_offline_log_directories",
     "GAUGE", {}),
    ("kafka.controller<type=KafkaController, name=ActiveControllerCount><>Value", "kafka_controller_active",
     "GAUGE", {}),
    ("kafka.controller<type=KafkaController, name=OfflinePartitionsCount><>Value",
     "kafka_controller_offline_partitions", "GAUGE", {}),
    ("kafka.controller<type=KafkaController, name=ActiveBrokerCount><>Value", "kafka_controller_active_brokers",
     "GAUGE", {}),
    ("kafka.controller<type=KafkaController, name=FencedBrokerCount><>Value", "kafka_controller_fenced_brokers",
     "GAUGE", {}),
    ("kafka.controller<type=KafkaController, name=GlobalPartitionCount><>Value",
     "kafka_controller_global_partitions", "GAUGE", {}),
    ("kafka.controller<type=KafkaController, name=PreferredReplicaImbalanceCount><>Value",
     "kafka_controller_preferred_replica_imbalance", "GAUGE", {}),
    ("kafka.controller<type=KafkaController, name=MetadataErrorCount><>Value",
     "kafka_controller_metadata_errors_total", "COUNTER", {}),
    ("kafka.server<type=raft-metrics><>current-leader", "kafka_raft_current_leader", "GAUGE", {}),
    ("kafka.server<type=raft-metrics><>current-epoch", "kafka_raft_current_epoch", "GAUGE", {}),
    ("kafka.server<type=raft-metrics><>high-watermark", "kafka_raft_high_watermark", "GAUGE", {}),
    ("kafka.server<type=raft-metrics><>log-end-offset", "kafka_raft_log_end_offset", "GAUGE", {}),
    ("kafka.server<type=raft-metrics><>commit-latency-avg", "kafka_raft_commit_latency_avg_ms", "GAUGE", {}),
    ("kafka.server<type=broker-metadata-metrics><>last-applied-record-lag-ms",
     "kafka_metadata_last_applied_record_lag_ms", "GAUGE", {}),
    ("kafka.controller<type=KafkaController, name=LastAppliedRecordLagMs><>Value",
     "kafka_metadata_last_applied_record_lag_ms", "GAUGE", {}),
)


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def exporter_config() -> str:
    """The JMX exporter's configuration (YAML) every node starts with. Attributes no rule names are not exported;
    the agent adds the JVM's own memory, GC and thread metrics (`jvm_*`, `process_*`) by itself."""
    lines = ["# kraftform: the Prometheus JMX exporter's rules. Generated; do not edit.",
             "lowercaseOutputName: true", "lowercaseOutputLabelNames: true", "includeObjectNames:"]
    lines += [f"  - {_quoted(name)}" for name in _INCLUDE]
    lines.append("rules:")
    for pattern, name, kind, labels in _RULES:
        lines += [f"  - pattern: {_quoted(pattern)}", f"    name: {name}", f"    type: {kind}"]
        if labels:
            lines.append("    labels:")
            lines += [f"      {key}: {_quoted(value)}" for key, value in labels.items()]
    return "\n".join(lines) + "\n"


def agent_option(agent_jar: str, bind_host: str, config_dir: str, port: int = METRICS_PORT) -> str:
    """The JVM option that starts the exporter inside a node, listening on `bind_host:port` only."""
    return f"-javaagent:{agent_jar}={bind_host}:{port}:{config_dir}/{METRICS_FILE}"
