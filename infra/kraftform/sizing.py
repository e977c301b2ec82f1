"""Cluster sizing from the expected load, with the rules of thumb of the course material.

- storage = messages/day x average size x retention (days) x replication, spread over the brokers;
- grow the cluster before 70% of disk, network or CPU is used, so size for 70% utilisation;
- controllers: 2f + 1 tolerate f failures (3 tolerate 1, 5 tolerate 2);
- a topic with n replicas and min.insync m accepts acks=all writes through n - m broker failures;
- partitions: enough for the expected write rate at one partition's throughput; about 24 is usually
  enough, and more partitions cost memory, file handles and failover time;
- consumers: each runs in a container of its own with `cores` Spark slots (its local master); a
  micro-batch has one task per input partition, or more when the source splits partitions for the cores.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kraftform.errors import KraftformError
from kraftform.spark.settings import input_partitions, job_settings
from kraftform.specset.hosts import HostLoss, host_losses, loss_text
from kraftform.specset.model import ConnectSpec, ConsumerSpec, SpecSet, TopicSpec
from kraftform.units import human_bytes

HEADROOM = 0.70
USUAL_MAX_PARTITIONS = 24
DAY_MS = 86_400_000


@dataclass(frozen=True)
class TopicSizing:
    name: str
    partitions: int
    suggested_partitions: int | None
    replication_factor: int
    min_insync_replicas: int

    @property
    def write_failures_tolerated(self) -> int:
        return max(self.replication_factor - self.min_insync_replicas, 0)


@dataclass(frozen=True)
class ConsumerSizing:
    name: str
    cores: int
    input_partitions: int
    #: Tasks of one micro-batch: one per input partition, or `minPartitions` when the source splits them.
    tasks: int
    exactly_once: bool

    @property
    def idle_cores(self) -> int:
        return max(0, self.cores - self.tasks)


@dataclass(frozen=True)
class ConnectSizing:
    """A Connect cluster: its workers and their heaps, and the tasks its running connectors ask for."""

    name: str
    workers: int
    heap_bytes: int
    tasks: int

    @property
    def memory_bytes(self) -> int:
        return self.workers * self.heap_bytes


@dataclass(frozen=True)
class SizingReport:
    declared_brokers: int
    declared_controllers: int
    storage_bytes: int | None
    brokers_for_storage: int | None
    brokers_for_network: int | None
    brokers_for_cpu: int | None
    brokers_for_replication: int
    controllers_needed: int
    topics: tuple[TopicSizing, ...]
    warnings: tuple[str, ...]
    consumers: tuple[ConsumerSizing, ...] = ()
    connect: tuple[ConnectSizing, ...] = ()
    #: Each host's loss, for a cluster spread over hosts.
    hosts: tuple[HostLoss, ...] = ()

    @property
    def consumer_cores(self) -> int:
        """What the consumers' containers ask of the machines beside the brokers."""
        return sum(c.cores for c in self.consumers)

    @property
    def brokers_needed(self) -> int:
        found = (self.brokers_for_storage, self.brokers_for_network, self.brokers_for_cpu,
                 self.brokers_for_replication)
        return max(n for n in found if n is not None)

    @property
    def undersized(self) -> bool:
        return self.brokers_needed > self.declared_brokers or self.controllers_needed > self.declared_controllers


def _ceil_div(need: float, capacity: float) -> int:
    return max(1, math.ceil(need / capacity))


def suggest_partitions(rate: int, per_partition: int, brokers: int) -> int:
    """Enough partitions for `rate`, rounded up to a multiple of the brokers so leaders spread evenly."""
    return _ceil_div(_ceil_div(rate, per_partition), brokers) * brokers


def _topic(t: TopicSpec, specs: SpecSet, per_partition: int | None) -> TopicSizing:
    suggested = None
    if t.expected_write_bytes_per_s is not None and per_partition:
        suggested = suggest_partitions(t.expected_write_bytes_per_s, per_partition, specs.cluster.brokers)
    min_isr = specs.cluster.min_insync(t)
    return TopicSizing(t.name, t.partitions, suggested, t.replication_factor, min_isr)


def _consumer(consumer: ConsumerSpec, specs: SpecSet) -> ConsumerSizing:
    settings = job_settings(consumer, specs)
    partitions = input_partitions(consumer, specs)
    split = int(settings.source_options.get("minPartitions", 0))
    return ConsumerSizing(consumer.name, consumer.cores, partitions, max(partitions, split), settings.exactly_once)


def size_cluster(specs: SpecSet) -> SizingReport:
    """What the declared cluster needs for its load and topics, and what it lacks."""
    c, load = specs.cluster, specs.cluster.load
    warnings: list[str] = []
    rf = (load.replication_factor if load and load.replication_factor else c.defaults.replication_factor)
    storage = for_storage = for_network = for_cpu = None
    per_partition = None
    if load is not None:
        days = load.retention_ms / DAY_MS if load.retention_ms > 0 else 0
        if load.retention_ms < 0:
            warnings.append("retention is unlimited: storage grows without bound; size it from a horizon")
        storage = math.ceil(load.messages_per_day * load.average_message_bytes * days * rf)
        if c.storage_per_broker_bytes:
            for_storage = _ceil_div(storage, c.storage_per_broker_bytes * HEADROOM)
        write = load.peak_write_bytes_per_s
        if write is not None and load.broker_network_bytes_per_s:
            inbound = write * rf  # producers plus follower fetches arriving at brokers
            outbound = write * (load.consumer_groups + rf - 1)  # consumers plus follower fetches served
            for_network = _ceil_div(max(inbound, outbound), load.broker_network_bytes_per_s * HEADROOM)
        if write is not None and load.broker_write_capacity_bytes_per_s:
            for_cpu = _ceil_div(write * rf, load.broker_write_capacity_bytes_per_s * HEADROOM)
        per_partition = load.partition_throughput_bytes_per_s
    max_rf = max([t.replication_factor for t in specs.topics] + [c.defaults.replication_factor])
    controllers = 2 * (load.controller_failures_tolerated if load else 1) + 1
    topics = tuple(_topic(t, specs, per_partition) for t in specs.topics)
    report = SizingReport(c.brokers, c.controllers, storage, for_storage, for_network, for_cpu, max_rf,
                          controllers, topics, ())
    if report.brokers_needed > c.brokers:
        warnings.append(f"cluster {c.name!r} declares {c.brokers} brokers but needs {report.brokers_needed} "
                        f"to stay under {HEADROOM:.0%} of disk, network and CPU")
    if controllers > c.controllers:
        warnings.append(f"{c.controllers} controllers tolerate {(c.controllers - 1) // 2} failure(s); "
                        f"{controllers} are needed to tolerate {(controllers - 1) // 2}")
    if storage is not None and c.storage_per_broker_bytes and for_storage:
        used = storage / (c.brokers * c.storage_per_broker_bytes)
        if used > HEADROOM:
            warnings.append(f"disk would be {used:.0%} full across {c.brokers} brokers "
                            f"({human_bytes(storage)} of {human_bytes(c.brokers * c.storage_per_broker_bytes)})")
    for t in topics:
        if t.suggested_partitions and t.partitions < t.suggested_partitions:
            warnings.append(f"topic {t.name!r} has {t.partitions} partitions; its expected write rate needs "
                            f"{t.suggested_partitions}")
        if t.partitions > USUAL_MAX_PARTITIONS and (t.suggested_partitions or 0) <= USUAL_MAX_PARTITIONS:
            warnings.append(f"topic {t.name!r} has {t.partitions} partitions; about {USUAL_MAX_PARTITIONS} "
                            f"is usually enough and each costs memory and failover time")
    consumers = []
    for consumer in specs.consumers:
        try:
            consumers.append(_consumer(consumer, specs))
        except KraftformError as exc:
            warnings.append(f"consumer {consumer.name!r}: {exc}")
    for sized in consumers:
        if sized.idle_cores:
            warnings.append(f"consumer {sized.name!r} has {sized.cores} cores for {sized.tasks} tasks per "
                            f"micro-batch: {sized.idle_cores} stay idle")
    connect = tuple(_connect(spec) for spec in specs.connect)
    warnings += [w for spec in specs.connect for w in _connect_warnings(spec, specs)]
    hosts = host_losses(specs) if c.hosts else ()
    warnings += [f"losing host {loss.host!r}: {line}" for loss in hosts for line in loss_text(loss)]
    return SizingReport(c.brokers, c.controllers, storage, for_storage, for_network, for_cpu, max_rf,
                        controllers, topics, tuple(warnings), tuple(consumers), connect, hosts)


def _connect(spec: ConnectSpec) -> ConnectSizing:
    tasks = sum(k.tasks_max for k in spec.connectors if k.state == "running")
    return ConnectSizing(spec.name, spec.workers, spec.heap_bytes, tasks)


def _connect_warnings(spec: ConnectSpec, specs: SpecSet) -> list[str]:
    """Workers without a task idle (Connect spreads tasks, not connectors); a sink's tasks beyond its topics'
    partitions idle (a partition is read by one task of the group)."""
    out = []
    sized = _connect(spec)
    if sized.tasks < spec.workers:
        out.append(f"Connect cluster {spec.name!r} has {spec.workers} workers for {sized.tasks} running task(s): "
                   f"{spec.workers - sized.tasks} stay idle (they take over when a worker fails)")
    for k in spec.connectors:
        partitions = sum(t.partitions for t in specs.topics if t.name in k.topics)
        if k.type == "sink" and partitions and k.tasks_max > partitions:
            out.append(f"connector {k.name!r} has tasks_max {k.tasks_max} for {partitions} partition(s): "
                       f"{k.tasks_max - partitions} task(s) stay idle")
    return out
