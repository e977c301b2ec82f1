"""A consumer and its profile -> everything the Spark job is configured with. Pure.

A profile's `spark` section holds Kafka source options (`kafka.*`, `failOnDataLoss`, `maxOffsetsPerTrigger`,
`minPartitions`), Spark settings (`spark.*`) and three of kraftform's own keys:

    trigger       a micro-batch interval, or `realtime` (Spark's Real-time Mode where the query allows it)
    exactlyOnce   `true`: the sink writes each micro-batch once, whatever replays (see `sinks`)
    minPartitions `auto`: split the input into at least two tasks per core

The consumer's own fields (trigger, max_offsets_per_trigger, options) win over its profile's. What cannot
work is an error here, so `kraftform validate` reports it: Real-time Mode silently stalls partitions it has
no task slot for, and rejects stateful queries, Parquet sinks and rate limits (see DESIGN.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from kraftform.spark.containers import spark_master_name
from kraftform.spark.query import QueryFacts, analyze
from kraftform.specset.hosts import SPARK_MASTER_PORT, spark_hosts
from kraftform.specset.model import REALTIME, ClusterSpec, ConsumerSpec, SpecSet
from kraftform.units import parse_duration_ms

#: How often a Real-time Mode query checkpoints (its "batch"); at least Spark's minimum of 5 s.
REALTIME_BATCH_MS = 30_000
#: What the redaction regexes must catch besides Spark's defaults: the JAAS login option holds the password.
REDACTION = "(?i)secret|password|token|access[.]?key|jaas|sasl"
OPTIONS_REDACTION = "(?i)url|jaas|sasl|password|secret|token"
OWN_KEYS = ("trigger", "exactlyOnce", "minPartitions")


class SettingsError(ValueError):
    """The consumer cannot run as declared; the message says what to change."""


#: Spark's own Prometheus support: the driver's metrics, streaming queries' input and processing rates and
#: batch durations among them, at the UI's /metrics/prometheus; one namespace, so names do not carry the
#: application id, which changes every run.
SPARK_METRICS = {
    "spark.sql.streaming.metricsEnabled": "true",
    "spark.metrics.namespace": "kraftform",
    "spark.metrics.conf.*.sink.prometheusServlet.class": "org.apache.spark.metrics.sink.PrometheusServlet",
    "spark.metrics.conf.*.sink.prometheusServlet.path": "/metrics/prometheus",
    "spark.ui.prometheus.enabled": "true",
}


@dataclass(frozen=True)
class Trigger:
    kind: Literal["processing_time", "realtime"]
    interval_ms: int

    def __str__(self) -> str:
        if self.kind == "realtime":
            return f"real-time mode (checkpoint every {self.interval_ms // 1000} s)"
        return "micro-batches as fast as possible" if self.interval_ms == 0 else \
            f"micro-batches every {self.interval_ms} ms"


@dataclass(frozen=True)
class JobSettings:
    consumer: str
    master: str
    trigger: Trigger
    output_mode: Literal["append", "update"]
    exactly_once: bool
    #: Spark Kafka source options, without the connection (bootstrap, login, CA: the job adds them).
    source_options: Mapping[str, str]
    #: Producer settings for a Kafka sink (Java client keys), from the profile.
    producer: Mapping[str, str]
    spark_conf: Mapping[str, str]
    facts: QueryFacts
    #: Why the settings are what they are, for `consumers list` and the job's first lines.
    notes: tuple[str, ...] = field(default=())
    #: An Avro consumer's writer schemas, by the id the Confluent wire format carries (as text: JSON keys): every
    #: version of its topics' value subjects when it was deployed (`registry.reconcile.writer_schemas`).
    avro_writers: Mapping[str, str] = field(default_factory=dict)

    @property
    def transactional_id(self) -> str:
        return self.source_options["groupIdPrefix"] + "-sink"


def master_url(cluster: ClusterSpec, cores: int) -> str:
    """The master a consumer's job is submitted to: a local master with its cores, the standalone master
    kraftform runs beside the cluster (in Docker, by its container name; on hosts, at the first Spark host's
    address), or an existing one."""
    if cluster.spark.master == "local":
        return f"local[{cores}]"
    if cluster.spark.master == "standalone":
        on = spark_hosts(cluster)
        return f"spark://{on[0].address if on else spark_master_name(cluster.name)}:{SPARK_MASTER_PORT}"
    return cluster.spark.master


def input_partitions(consumer: ConsumerSpec, specs: SpecSet) -> int:
    return sum(t.partitions for name in consumer.topics if (t := specs.topic(name)) is not None)


def _trigger_value(value: str, profile: str) -> int | str:
    if value == REALTIME:
        return REALTIME
    try:
        return parse_duration_ms(value)
    except ValueError as exc:
        raise SettingsError(f"profile {profile!r}: spark.trigger {value!r}: {exc}") from None


def job_settings(consumer: ConsumerSpec, specs: SpecSet) -> JobSettings:
    """The consumer's effective settings; raises SettingsError (or the query's QueryError) when it cannot run."""
    profile = specs.profiles[consumer.profile]
    spark = dict(profile.spark)
    facts = analyze(consumer)
    partitions = max(1, input_partitions(consumer, specs))
    notes: list[str] = []
    # Parquet sinks always write batch by batch (exactly-once for every reader of the directory); a Kafka sink
    # when the profile asks, since it costs a transaction per micro-batch.
    exactly_once = consumer.sink.type == "parquet" or (
        consumer.sink.type == "kafka" and spark.get("exactlyOnce", "false").lower() == "true")

    requested = consumer.trigger if consumer.trigger is not None else _trigger_value(spark.get("trigger", "0ms"),
                                                                                     consumer.profile)
    trigger = Trigger("processing_time", 0)
    if requested == REALTIME:
        explicit = consumer.trigger == REALTIME
        blockers = [why for bad, why in (
            (facts.stateful, "the query keeps state (aggregation or DISTINCT)"),
            (consumer.sink.type != "kafka", f"the sink is {consumer.sink.type} (only Kafka works)"),
            (exactly_once and consumer.sink.type == "kafka",
             "the profile asks for the exactly-once sink, which writes per micro-batch"),
            (consumer.transform is not None, "a Python transform runs per micro-batch"),
        ) if bad]
        if explicit and consumer.max_offsets_per_trigger is not None:
            blockers.append("max_offsets_per_trigger is set (Real-time Mode reads without a limit)")
        if blockers:
            if explicit:
                raise SettingsError(f"trigger: realtime is not possible: {'; '.join(blockers)}")
            notes.append(f"Real-time Mode not used ({'; '.join(blockers)}): micro-batches as fast as possible")
        elif consumer.cores < partitions:
            message = (f"Real-time Mode needs a task slot per input partition: {partitions} partitions, "
                       f"{consumer.cores} cores (with fewer, Spark raises no error and the extra partitions "
                       f"never advance)")
            if explicit:
                raise SettingsError(f"{message}; set cores: {partitions}, or a micro-batch trigger")
            notes.append(f"{message}: micro-batches as fast as possible instead (set cores: {partitions} for it)")
        else:
            trigger = Trigger("realtime", REALTIME_BATCH_MS)
            notes.append(f"Real-time Mode: stateless query, Kafka sink, {consumer.cores} slots for "
                         f"{partitions} partitions")
    else:
        assert isinstance(requested, int)
        trigger = Trigger("processing_time", requested)

    source = {k: v for k, v in spark.items() if k not in OWN_KEYS and not k.startswith("spark.")}
    source.update({"subscribe": ",".join(consumer.topics), "startingOffsets": consumer.starting_offsets,
                   "groupIdPrefix": consumer.group_id_prefix})
    source.setdefault("failOnDataLoss", "true")
    if facts.uses_headers:
        source["includeHeaders"] = "true"
    if consumer.max_offsets_per_trigger is not None:
        source["maxOffsetsPerTrigger"] = str(consumer.max_offsets_per_trigger)
    if spark.get("minPartitions") == "auto":
        if partitions < 2 * consumer.cores:
            source["minPartitions"] = str(2 * consumer.cores)
            notes.append(f"{partitions} input partitions split into {2 * consumer.cores} tasks for "
                         f"{consumer.cores} cores")
    elif "minPartitions" in spark:
        source["minPartitions"] = spark["minPartitions"]
    if trigger.kind == "realtime":
        source.pop("maxOffsetsPerTrigger", None)
        source.pop("minPartitions", None)
    source.update(consumer.options)

    shuffle = max(1, min(2 * consumer.cores, partitions))
    conf = {"spark.sql.shuffle.partitions": str(shuffle), "spark.redaction.regex": REDACTION,
            "spark.sql.redaction.options.regex": OPTIONS_REDACTION, "spark.sql.session.timeZone": "UTC",
            "spark.ui.showConsoleProgress": "false", **SPARK_METRICS}
    conf.update({k: v for k, v in spark.items() if k.startswith("spark.")})
    if facts.stateful:
        notes.append(f"state in {conf['spark.sql.shuffle.partitions']} shuffle partitions (fixed by the first "
                     f"checkpoint)")
    if exactly_once:
        notes.append("exactly-once sink: " + ("one Kafka transaction per micro-batch, its batch id committed "
                                              "with it" if consumer.sink.type == "kafka" else
                                              "each micro-batch's files appear at once, under its batch id"))
    master = master_url(specs.cluster, consumer.cores)
    if not master.startswith("local"):
        # Client mode: the driver is this process; the consumer's cores are what it takes of the cluster.
        conf.setdefault("spark.cores.max", str(consumer.cores))
        conf.setdefault("spark.executor.cores", str(min(consumer.cores, specs.cluster.spark.worker_cores)))
        notes.append(f"submitted to {master} in client mode: the driver here, {consumer.cores} executor cores "
                     f"there")
    return JobSettings(
        consumer=consumer.name, master=master, trigger=trigger,
        output_mode="update" if trigger.kind == "realtime" else "append", exactly_once=exactly_once,
        source_options=source, producer=dict(profile.producer), spark_conf=conf, facts=facts, notes=tuple(notes))
