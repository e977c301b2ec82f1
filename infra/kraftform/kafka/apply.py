"""Carry out a reviewed plan against a live cluster, then prove it worked by observing again.

Steps run in the plan's kind order (users before the ACLs and quotas that name them, topics before their
configs and ACLs), each as one batched request where Kafka allows. Every step is idempotent: "already
exists" and "already gone" count as success, and the final observation checks the result rather than
trusting the responses. An apply killed at any point therefore converges on the next run.

Nothing is sent when the plan holds refused changes, destructive changes without `allow_destructive`, or
users whose password cannot be read: those are found before the first request.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from confluent_kafka.cimpl import NewTopic

from kraftform.errors import KraftformError, PlanRefusedError, UsageError
from kraftform.kafka.admin import Admin, batches, kafka_python_admin
from kraftform.kafka.connect import Connection
from kraftform.kafka.credentials import require_password, require_passwords
from kraftform.kafka.observe import PATTERN_TYPES, RESOURCE_TYPES
from kraftform.kafka.quotas import alter_quotas
from kraftform.plan import placement
from kraftform.plan.changes import Action, Change, Kind, Plan, Safety
from kraftform.plan.render import listed
from kraftform.plan.state import ClusterState
from kraftform.spec import model
from kraftform.spec.model import SpecSet

#: Items per write request, and how long one may take: the controller commits each item, and thousands of
#: ACLs in one request outlast a 30 s timeout on two cores.
BATCH = 500
WRITE_TIMEOUT = 120.0
RETRIES = 3
THROTTLED_REPLICAS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")
THROTTLE_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")

_RESOURCE_TYPES = {name: kind for kind, name in RESOURCE_TYPES.items()}
_PATTERNS = {name: kind for kind, name in PATTERN_TYPES.items()}

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ApplyOptions:
    allow_destructive: bool = False
    #: Replication throttle while replicas move, bytes per second per broker.
    throttle_bytes_per_s: int = 50 * 1024 * 1024
    reassignment_timeout_s: float = 600.0


def check_applicable(plan: Plan, specs: SpecSet, passwords: Mapping[str, str | None],
                     options: ApplyOptions) -> None:
    """Every reason not to start, before anything is sent."""
    if plan.refused:
        raise PlanRefusedError("the plan has refused changes; nothing was applied:\n" + "\n".join(
            f"  {c.kind} {c.resource}: {c.reason}" for c in plan.refused))
    destructive = plan.by_safety(Safety.DESTRUCTIVE)
    if destructive and not options.allow_destructive:
        shown = [f"  {c.action} {c.kind} {c.resource}{' ' + c.key if c.key else ''}: {c.reason}"
                 for c in destructive[:20]]
        if len(destructive) > 20:
            shown.append(f"  ... and {len(destructive) - 20} more (see the plan)")
        raise PlanRefusedError(f"{len(destructive)} destructive change(s) need --allow-destructive; "
                               "nothing was applied:\n" + "\n".join(shown))
    for c in plan.changes:
        if c.kind is Kind.ACL and c.action is Action.CREATE:
            binding = _binding_of(c, specs)
            if binding.resource_type not in _RESOURCE_TYPES or \
                    binding.operation.upper() not in AclOperation.__members__:
                raise UsageError(f"ACL {binding.describe()}: confluent-kafka cannot manage ACLs on "
                                 f"{binding.resource_type} resources or {binding.operation} operations")
    users = {u.name: u for u in specs.users}
    require_passwords([users[c.resource] for c in plan.changes
                       if c.kind is Kind.USER and c.action is not Action.DELETE], passwords)


def _binding_of(change: Change, specs: SpecSet) -> model.AclBinding:
    for binding in specs.acl_bindings():
        if binding.principal == change.resource and binding.grant() == change.key:
            return binding
    raise KraftformError(f"internal: no spec binding for {change.resource} {change.key}")


def _retriable(error: KafkaError) -> bool:
    return bool(error.retriable()) or error.code() in (KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT)


def _wait(futures: Mapping[Any, Future[Any]], what: str, benign: Iterable[str] = (), last: bool = True) -> list[Any]:
    """Resolve every future; errors named in `benign` are success (the step was already done). Returns the
    keys that failed with a retriable error (a busy cluster timing out), unless this is the `last` try."""
    failed, retry = [], []
    for key, future in futures.items():
        try:
            future.result(timeout=WRITE_TIMEOUT + 10)
        except KafkaException as exc:
            error = exc.args[0]
            if error.name() in benign:
                continue
            if not last and _retriable(error):
                retry.append(key)
            else:
                failed.append(f"{getattr(key, 'name', key)}: {error.name()}: {error.str()}")
    if failed:
        raise KraftformError(f"{what} failed: {listed(failed, sep='; ')}")
    return retry


class Applier:
    def __init__(self, connection: Connection, specs: SpecSet, observed: ClusterState,
                 passwords: Mapping[str, str | None], options: ApplyOptions, progress: Progress) -> None:
        self.admin = Admin(connection)
        self.connection = connection
        self.specs = specs
        self.observed = observed
        self.passwords = passwords
        self.options = options
        self.progress = progress

    def _send(self, api: str, items: list[Any], call: Callable[[list[Any]], Mapping[Any, Future[Any]]], what: str,
              benign: Iterable[str] = (), key: Callable[[Any], Any] = lambda item: item) -> None:
        """Send `items` in batches; those that time out on a busy cluster are sent again (every write here
        is idempotent), up to RETRIES times with a growing pause."""
        for batch in batches(items, BATCH):
            pending = batch
            for attempt in range(RETRIES + 1):
                self.admin.requests[api] += 1
                retry = set(_wait(call(pending), what, benign, last=attempt == RETRIES))
                if not retry:
                    break
                self.progress(f"    {what}: {len(retry)} timed out (the cluster is busy); retrying")
                time.sleep(2.0 * (attempt + 1))
                pending = [item for item in pending if key(item) in retry]

    def run(self, plan: Plan) -> None:
        by_kind: dict[Kind, list[Change]] = defaultdict(list)
        for change in plan.changes:
            by_kind[change.kind].append(change)
        steps = [(kind, changes) for kind, changes in by_kind.items() if kind in self.STEPS]
        for number, (kind, changes) in enumerate(steps, 1):
            started = time.monotonic()
            self.progress(f"[{number}/{len(steps)}] {kind}: {len(changes)} change(s) ...")
            self.STEPS[kind](self, changes)
            self.progress(f"[{number}/{len(steps)}] {kind}: done in {time.monotonic() - started:.1f} s")

    # --- users ---------------------------------------------------------------------------------------
    def users(self, changes: list[Change]) -> None:
        specs = {u.name: u for u in self.specs.users}
        alterations: list[Any] = []
        for name in sorted({c.resource for c in changes}):
            current = self.observed.users.get(name)
            spec = specs.get(name)
            if spec is not None:
                mechanism = ScramMechanism[spec.mechanism.replace("-", "_")]
                alterations.append(UserScramCredentialUpsertion(
                    name, ScramCredentialInfo(mechanism, spec.iterations),
                    require_password(spec, self.passwords).encode()))
            if current is not None and (spec is None or spec.mechanism != current.mechanism):
                alterations.append(UserScramCredentialDeletion(
                    name, ScramMechanism[current.mechanism.replace("-", "_")]))
        self._send("AlterUserScramCredentials", alterations,
                   lambda batch: self.admin.client.alter_user_scram_credentials(batch, request_timeout=WRITE_TIMEOUT),
                   "alter SCRAM users", benign={"RESOURCE_NOT_FOUND"}, key=lambda a: a.user)

    # --- topics --------------------------------------------------------------------------------------
    def topics(self, changes: list[Change]) -> None:
        created = [self.specs.topic(c.resource) for c in changes if c.action is Action.CREATE]
        new = [NewTopic(t.name, t.partitions, t.replication_factor, config=dict(t.config))
               for t in created if t is not None]
        self._send("CreateTopics", new,
                   lambda batch: self.admin.client.create_topics(batch, request_timeout=WRITE_TIMEOUT),
                   "create topics", benign={"TOPIC_ALREADY_EXISTS"}, key=lambda t: t.topic)
        self._send("DeleteTopics", [c.resource for c in changes if c.action is Action.DELETE],
                   lambda batch: self.admin.client.delete_topics(batch, request_timeout=WRITE_TIMEOUT),
                   "delete topics", benign={"UNKNOWN_TOPIC_OR_PART", "UNKNOWN_TOPIC_ID"})

    def topic_configs(self, changes: list[Change]) -> None:
        entries: dict[str, list[ConfigEntry]] = defaultdict(list)
        for c in changes:
            assert c.key is not None
            spec = self.specs.topic(c.resource)
            if c.action is Action.DELETE or spec is None:
                entries[c.resource].append(ConfigEntry(c.key, None, incremental_operation=AlterConfigOpType.DELETE))
            else:
                entries[c.resource].append(ConfigEntry(c.key, spec.config[c.key],
                                                       incremental_operation=AlterConfigOpType.SET))
        self._alter_configs(ResourceType.TOPIC, entries, "alter topic configs")

    def _alter_configs(self, restype: ResourceType, entries: Mapping[str, list[ConfigEntry]], what: str) -> None:
        resources = [ConfigResource(restype, name, incremental_configs=e) for name, e in sorted(entries.items())]
        self._send("IncrementalAlterConfigs", resources,
                   lambda batch: self.admin.client.incremental_alter_configs(batch, request_timeout=WRITE_TIMEOUT),
                   what)

    def partitions(self, changes: list[Change]) -> None:
        grow = [NewPartitions(c.resource, int(c.desired or 0)) for c in changes if c.action is Action.UPDATE]
        # INVALID_PARTITIONS: already at that count (an earlier, interrupted run got there); the final
        # observation verifies it.
        self._send("CreatePartitions", grow,
                   lambda batch: self.admin.client.create_partitions(batch, request_timeout=WRITE_TIMEOUT),
                   "add partitions", benign={"INVALID_PARTITIONS"}, key=lambda p: p.topic)

    def replication(self, changes: list[Change]) -> None:
        from kafka.structs import TopicPartition

        targets: dict[Any, list[int]] = {}
        for c in changes:
            topic = self.observed.topics[c.resource]
            spec = self.specs.topic(c.resource)
            assert spec is not None
            new = placement.reassign(topic.assignment, self.observed.brokers, spec.replication_factor)
            targets.update({TopicPartition(c.resource, p): list(replicas) for p, replicas in enumerate(new)})
        topics = sorted({c.resource for c in changes})
        rate = str(self.options.throttle_bytes_per_s)
        # Throttle only the moving topics' replication, at a cluster-wide rate, while replicas copy.
        self._broker_throttle(rate)
        self._alter_configs(ResourceType.TOPIC, {t: [
            ConfigEntry(k, "*", incremental_operation=AlterConfigOpType.SET) for k in THROTTLED_REPLICAS]
            for t in topics}, "throttle topics")
        with kafka_python_admin(self.connection, self.admin.requests) as client:
            self.admin.requests["AlterPartitionReassignments"] += 1
            errors = {tp: e for tp, e in client.alter_partition_reassignments(targets).items() if e is not None}
            if errors:
                raise KraftformError("reassignment refused: " + "; ".join(
                    f"{tp.topic}-{tp.partition}: {e.__name__}" for tp, e in sorted(errors.items())[:10]))
            deadline = time.monotonic() + self.options.reassignment_timeout_s
            while True:
                self.admin.requests["ListPartitionReassignments"] += 1
                moving = client.list_partition_reassignments(list(targets))
                if not moving:
                    break
                if time.monotonic() > deadline:
                    raise KraftformError(f"{len(moving)} partition(s) still moving after "
                                         f"{self.options.reassignment_timeout_s:.0f} s; they keep moving in "
                                         f"the background: run apply again later")
                self.progress(f"    {len(moving)} partition(s) still moving ...")
                time.sleep(1.0)
        self._alter_configs(ResourceType.TOPIC, {t: [
            ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in THROTTLED_REPLICAS]
            for t in topics}, "remove topic throttles")
        self._broker_throttle(None)

    def _broker_throttle(self, rate: str | None) -> None:
        """Set (or with None remove) the replication throttle rate on every broker: broker configs go to
        their own broker, one request each."""
        op = AlterConfigOpType.SET if rate is not None else AlterConfigOpType.DELETE
        for broker in sorted(self.observed.brokers):
            self._alter_configs(ResourceType.BROKER, {str(broker): [
                ConfigEntry(k, rate, incremental_operation=op) for k in THROTTLE_RATES]}, "replication throttle")

    # --- access --------------------------------------------------------------------------------------
    def acls(self, changes: list[Change]) -> None:
        bindings = {c: _binding_of(c, self.specs) if c.action is Action.CREATE else self._observed_binding(c)
                    for c in changes}
        create = [_confluent_binding(b) for c, b in bindings.items() if c.action is Action.CREATE]
        self._send("CreateAcls", create,
                   lambda batch: self.admin.client.create_acls(batch, request_timeout=WRITE_TIMEOUT), "create ACLs")
        delete = [_confluent_binding(b, AclBindingFilter) for c, b in bindings.items() if c.action is Action.DELETE]
        self._send("DeleteAcls", delete,
                   lambda batch: self.admin.client.delete_acls(batch, request_timeout=WRITE_TIMEOUT), "delete ACLs")

    def _observed_binding(self, change: Change) -> model.AclBinding:
        for binding in self.observed.acls:
            if binding.principal == change.resource and binding.grant() == change.key:
                return binding
        raise KraftformError(f"internal: no observed binding for {change.resource} {change.key}")

    def quotas(self, changes: list[Change]) -> None:
        entities = {e.describe(): e for e in (*self.observed.quotas, *(q.entity for q in self.specs.quotas))}
        desired = {q.entity: q.values for q in self.specs.quotas}
        alterations: dict[model.QuotaEntity, dict[str, float | None]] = defaultdict(dict)
        for c in changes:
            assert c.key is not None
            entity = entities[c.resource]
            alterations[entity][c.key] = None if c.action is Action.DELETE else desired[entity][c.key]
        with kafka_python_admin(self.connection, self.admin.requests) as client:
            self.admin.requests["AlterClientQuotas"] += 1
            alter_quotas(client, alterations)

    STEPS: Mapping[Kind, Callable[[Applier, list[Change]], None]] = {
        Kind.USER: users, Kind.TOPIC: topics, Kind.TOPIC_CONFIG: topic_configs, Kind.PARTITIONS: partitions,
        Kind.REPLICATION: replication, Kind.ACL: acls, Kind.QUOTA: quotas}


def _confluent_binding(b: model.AclBinding, cls: type = AclBinding) -> Any:
    name = "kafka-cluster" if b.resource_type == "cluster" else b.resource_name
    return cls(_RESOURCE_TYPES[b.resource_type], name, _PATTERNS[b.pattern_type], b.principal, b.host,
               AclOperation[b.operation.upper()], AclPermissionType[b.permission.upper()])
