"""Cluster status for operators: brokers, the controller quorum, under-replicated and offline partitions.

confluent-kafka cannot describe the KRaft quorum, so the quorum comes from Kafka's own
MetadataQuorumCommand, run from the jars kraftform already fetched, with the admin client config.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaException

from kraftform.cluster.connection import Connection
from kraftform.errors import ConnectionFailed, EnvironmentMissing
from kraftform.kafka.health import ClusterHealth, describe_health
from kraftform.monitoring.status import Status
from kraftform.runtime.nodes.deployment import Deployment, admin_config
from kraftform.runtime.nodes.tools import METADATA_QUORUM, run_kafka_tool
from kraftform.specset.model import SpecSet


@dataclass(frozen=True)
class QuorumStatus:
    leader_id: int
    voters: tuple[int, ...]
    observers: tuple[int, ...]
    max_follower_lag: int


def _ids(line: str) -> tuple[int, ...]:
    return tuple(int(i) for i in re.findall(r'"id":\s*(\d+)', line))


def parse_quorum(text: str) -> QuorumStatus:
    fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
    try:
        return QuorumStatus(int(fields["LeaderId"].strip()), _ids(fields["CurrentVoters"]),
                            _ids(fields.get("CurrentObservers", "")), int(fields["MaxFollowerLag"].strip()))
    except (KeyError, ValueError) as exc:
        raise EnvironmentMissing(f"unexpected MetadataQuorumCommand output ({exc}):\n{text[-1000:]}") from None


def quorum_status(deployment: Deployment, state_dir: Path) -> QuorumStatus:
    return parse_quorum(run_kafka_tool(METADATA_QUORUM, [
        "--bootstrap-server", deployment.bootstrap, "--command-config", str(state_dir / "admin.properties"),
        "describe", "--status"], deployment.kafka_version))


@dataclass(frozen=True)
class ClusterStatus:
    health: ClusterHealth
    quorum: QuorumStatus
    expected_brokers: int

    @property
    def healthy(self) -> bool:
        return self.health.ok and len(self.health.brokers) == self.expected_brokers


def cluster_status(deployment: Deployment, state_dir: Path) -> ClusterStatus:
    """The cluster's health; an unreachable cluster or a refused login is an error naming the cause (it was a
    Python traceback after a 10 s timeout)."""
    from kraftform.kafka.admin import Admin

    connection = admin_config(state_dir)
    Admin(connection).metadata(timeout=10.0)
    try:
        health = describe_health(connection)
    except (KafkaException, TimeoutError) as exc:
        raise ConnectionFailed(f"cannot read the health of the cluster at {deployment.bootstrap}: {exc}") from None
    return ClusterStatus(health, quorum_status(deployment, state_dir), deployment.brokers)


def status_of(specs: SpecSet, connection: Connection, data_dir: Path | None,
              state_dir: Path | None = None) -> Status:
    """`kraftform status`: one look at the cluster (the Spark consumers' positions from their checkpoints under
    `data_dir`; the Connect clusters whose workers run beside the cluster in `state_dir`), judged against
    the specs."""
    from kraftform.cluster.topology import topology
    from kraftform.kafka.status import MIN_ISR, observe_status
    from kraftform.monitoring.status import assess
    from kraftform.runtime.connect.clusters import observe
    from kraftform.spark.checkpoint import committed_offsets
    from kraftform.spark.job import placement

    positions: dict[str, Mapping[tuple[str, int], int] | None] = {}
    for consumer in specs.consumers:
        checkpoint = placement(consumer, data_dir).checkpoint if data_dir is not None else None
        done = committed_offsets(checkpoint) if checkpoint is not None and checkpoint.is_dir() else None
        positions[consumer.name] = done[1] if done is not None else None
    declared = {t.name: int(t.config.get(MIN_ISR, 1)) for t in specs.topics}
    connect = tuple(observe(state_dir, spec) for spec in specs.connect) if state_dir is not None else ()
    notes = tuple(f"Connect cluster {spec.name}: not looked at (its workers are found through the "
                  f"--state-dir of the cluster they run beside)" for spec in specs.connect) if state_dir is None else ()
    return assess(topology(specs.cluster), declared, observe_status(connection, specs, positions), connect, notes)
