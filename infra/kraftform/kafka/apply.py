"""Carry out a reviewed plan against a live cluster, then prove it worked by observing again.

Steps run in `Applier.STEPS` order: users first (the ACLs and quotas that follow name them), then ACLs and
quotas, then topics, their configs, partitions and replicas (ACLs and quotas go before topics because brokers
publish committed metadata behind replica creation: after 4,000 new topics, their ACLs took 29 s to show).
Each step is one batched request where Kafka allows. Every step is idempotent: "already
exists" and "already gone" count as success, and the final observation checks the result rather than
trusting the responses. An apply killed at any point therefore converges on the next run.

Nothing is sent when the plan holds refused changes, destructive changes without `allow_destructive`, or
users whose password cannot be read: those are found before the first request.

Each change carries what to send (its typed payload), so an apply needs only the plan, the connection and
the passwords, and every step is linear in the number of changes.
"""

from __future__ import annotations

import secrets as pysecrets
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, TypeVar

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

from kraftform.cluster.connection import Connection
from kraftform.definitions.server_configs import THROTTLE_RATES
from kraftform.definitions.topic_configs import THROTTLED_REPLICAS
from kraftform.errors import (
    InternalError,
    KafkaRequestFailed,
    KraftformError,
    PlanRefusedError,
    UsageError,
)
from kraftform.kafka.admin import Admin, batches, classify, kafka_python_admin
from kraftform.kafka.credentials import require_passwords
from kraftform.kafka.observe import PATTERN_TYPES, RESOURCE_TYPES
from kraftform.kafka.quotas import alter_quotas
from kraftform.plan.changes import (
    Action,
    BrokerSetting,
    Change,
    ConfigValue,
    Credential,
    FeatureLevel,
    Kind,
    PartitionCount,
    Plan,
    QuotaValue,
    Reassignment,
    Safety,
)
from kraftform.plan.changes import (
    NewTopic as TopicPayload,
)
from kraftform.specset import model
from kraftform.waiting import NotYet, poll

#: Users an apply creates with a password of its own (specset/model.py, SCRAM_ANCHORS).
ANCHOR_USERS = frozenset(model.SCRAM_ANCHORS.values())

#: Items per write request, and how long one may take: the controller commits each item, and thousands of
#: ACLs in one request outlast a 30 s timeout on two cores.
BATCH = 500
#: Metadata records per CreateTopics request (a topic is one, plus one per partition and per config
#: override). A broker applies each committed request as one metadata update and creates its replicas
#: before taking the next, so topics of a later request stay invisible meanwhile: 1,000 topics sent 500 at a
#: time kept the second 500 out of Metadata for 14 s, sent at once they all showed in under a second. The
#: controller refuses a request over 10,000 records ("excessively large batch operation"). When more than
#: one request is needed the short one goes first: the wait for the last to show is the replicas of those
#: before it.
TOPIC_RECORDS = 9000
WRITE_TIMEOUT = 120.0
RETRIES = 3

_RESOURCE_TYPES = {name: kind for kind, name in RESOURCE_TYPES.items()}
_PATTERNS = {name: kind for kind, name in PATTERN_TYPES.items()}

Progress = Callable[[str], None]


@dataclass(frozen=True)
class ApplyOptions:
    allow_destructive: bool = False
    #: Replication throttle while replicas move, bytes per second per broker.
    throttle_bytes_per_s: int = 50 * 1024 * 1024
    reassignment_timeout_s: float = 600.0


def check_applicable(plan: Plan, declared_users: Iterable[model.UserSpec], passwords: Mapping[str, str | None],
                     options: ApplyOptions) -> None:
    """Every reason not to start, before anything is sent."""
    if plan.refused:
        raise PlanRefusedError("the plan has refused changes; nothing was applied:\n" + "\n".join(
            f"  {c.kind} {c.resource}: {c.reason}" for c in plan.refused))
    destructive = plan.without_node_work().by_safety(Safety.DESTRUCTIVE)  # node work is never applied here
    if destructive and not options.allow_destructive:
        shown = [f"  {c.action} {c.kind} {c.resource}{' ' + c.key if c.key else ''}: {c.reason}"
                 for c in destructive[:20]]
        if len(destructive) > 20:
            shown.append(f"  ... and {len(destructive) - 20} more (see the plan)")
        raise PlanRefusedError(f"{len(destructive)} destructive change(s) need --allow-destructive; "
                               "nothing was applied:\n" + "\n".join(shown))
    for c in plan.changes:
        if c.kind is Kind.ACL and c.action is Action.CREATE:
            binding = _payload(c, model.AclBinding)
            if binding.resource_type not in _RESOURCE_TYPES or \
                    binding.operation.upper() not in AclOperation.__members__:
                raise UsageError(f"ACL {binding.describe()}: confluent-kafka cannot manage ACLs on "
                                 f"{binding.resource_type} resources or {binding.operation} operations")
    users = {u.name: u for u in declared_users}
    require_passwords([users[c.resource] for c in plan.changes if c.kind is Kind.USER
                       and c.action is not Action.DELETE and c.resource not in ANCHOR_USERS], passwords)


P = TypeVar("P")


def _payload(change: Change, kind: type[P]) -> P:
    """What `change` sends; a plan made offline (a diff of two revisions) has none to send."""
    if not isinstance(change.payload, kind):
        raise InternalError(f"internal: {change.action} {change.kind} {change.resource} carries no "
                            f"{kind.__name__} to apply (only a live plan can be applied)")
    return change.payload


def _retriable(error: KafkaError) -> bool:
    return bool(error.retriable()) or error.code() in (KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT)


@dataclass(frozen=True)
class Failure:
    """One resource's write that the cluster refused: what was sent, for what, and why."""

    resource: str
    what: str
    cause: str
    kind: type[KraftformError]

    def __str__(self) -> str:
        return f"{self.resource}: {self.what}: {self.cause}"


def _label(key: Any) -> str:
    for attribute in ("topic", "name", "user"):
        value = getattr(key, attribute, None)
        if isinstance(value, str):
            return value
    return str(key)


def _wait(futures: Mapping[Any, Future[Any]], what: str, benign: Iterable[str] = (), last: bool = True
          ) -> tuple[list[Any], list[Failure]]:
    """Resolve every future on its own; errors named in `benign` are success (the step was already done).
    Returns the keys that failed with a retriable error (a busy cluster timing out; on the `last` try those
    fail too), and each resource that failed, with its cause and class."""
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
                failed.append(Failure(_label(key), what, f"{error.name()}: {error.str()}", classify(error)))
    return retry, failed


class Applier:
    """Sends a plan's payloads; knows nothing of specs or observations.

    Each resource's write succeeds or fails on its own, as Kafka answers per resource: a refused topic does
    not stop the other topics of its batch, nor the ACLs and quotas of later steps. What depends on a failed
    resource (a topic's configs, partitions and replicas after its creation failed) is not sent. `run` raises
    at the end, listing every resource that failed and why, after everything independent was applied."""

    def __init__(self, connection: Connection, passwords: Mapping[str, str | None], options: ApplyOptions,
                 progress: Progress, admin: Admin | None = None) -> None:
        self.admin = admin or Admin(connection)
        self.connection = connection
        self.passwords = passwords
        self.options = options
        self.progress = progress
        self.failures: list[Failure] = []

    def _send(self, api: str, items: list[Any], call: Callable[[list[Any]], Mapping[Any, Future[Any]]], what: str,
              benign: Iterable[str] = (), key: Callable[[Any], Any] = lambda item: item,
              size: int = BATCH, weight: Callable[[Any], int] = lambda _item: 1, fullest_last: bool = False
              ) -> None:
        """Send `items` in batches (`weight` adding up to `size`; with `fullest_last`, the short batch goes
        first); those that time out on a busy cluster are sent again (every write here is idempotent), up to
        RETRIES times with a growing pause."""
        runs = list(batches(items, size, weight))
        for batch in (runs[-1:] + runs[:-1] if fullest_last else runs):
            pending = batch
            for attempt in range(RETRIES + 1):
                self.admin.requests[api] += 1
                waiting, failed = _wait(call(pending), what, benign, last=attempt == RETRIES)
                for failure in failed:
                    self.progress(f"    {failure}")
                self.failures += failed
                retry = set(waiting)
                if not retry:
                    break
                self.progress(f"    {what}: {len(retry)} timed out (the cluster is busy); retrying")
                time.sleep(2.0 * (attempt + 1))
                pending = [item for item in pending if key(item) in retry]

    def run(self, plan: Plan) -> None:
        """Every step in order; raises at the end if any resource failed (each one listed, with its cause)."""
        self.failures = []
        by_kind: dict[Kind, list[Change]] = defaultdict(list)
        for change in plan.changes:
            by_kind[change.kind].append(change)
        steps = [(kind, by_kind[kind]) for kind in self.STEPS if kind in by_kind]
        for number, (kind, changes) in enumerate(steps, 1):
            if kind in (Kind.TOPIC_CONFIG, Kind.PARTITIONS, Kind.REPLICATION):
                uncreated = {f.resource for f in self.failures if f.what == "create topics"}
                changes = [c for c in changes if c.resource not in uncreated]
                if not changes:
                    continue
            started = time.monotonic()
            self.progress(f"[{number}/{len(steps)}] {kind}: {len(changes)} change(s) ...")
            self.STEPS[kind](self, changes)
            self.progress(f"[{number}/{len(steps)}] {kind}: done in {time.monotonic() - started:.1f} s")
        if self.failures:
            kinds = {f.kind for f in self.failures}
            error = kinds.pop() if len(kinds) == 1 else KafkaRequestFailed
            raise error(f"{len(self.failures)} of {len(plan.changes)} change(s) failed; every other one was "
                        f"applied:\n" + "\n".join(f"  {f}" for f in self.failures))

    # --- users ---------------------------------------------------------------------------------------
    def users(self, changes: list[Change]) -> None:
        upserts: dict[str, tuple[str, int]] = {}
        deletes: dict[str, str] = {}
        for c in changes:  # a user's several changes (iterations, password, ...) make one credential write
            credential = _payload(c, Credential)
            if credential.upsert is not None:
                upserts[c.resource] = credential.upsert
            if credential.delete is not None:
                deletes[c.resource] = credential.delete
        alterations: list[Any] = []
        for name, (mechanism, iterations) in sorted(upserts.items()):
            # An anchor's password is never used nor kept: a random one.
            password = pysecrets.token_urlsafe(32) if name in ANCHOR_USERS else self.passwords.get(name)
            if password is None:
                raise UsageError(f"user {name!r}: no password was given for it; nothing was sent for it")
            alterations.append(UserScramCredentialUpsertion(
                name, ScramCredentialInfo(_mechanism(mechanism), iterations), password.encode()))
        alterations += [UserScramCredentialDeletion(name, _mechanism(mechanism))
                        for name, mechanism in sorted(deletes.items())]
        self._send("AlterUserScramCredentials", alterations,
                   lambda batch: self.admin.client.alter_user_scram_credentials(batch, request_timeout=WRITE_TIMEOUT),
                   "alter SCRAM users", benign={"RESOURCE_NOT_FOUND"}, key=lambda a: a.user)

    # --- topics --------------------------------------------------------------------------------------
    def topics(self, changes: list[Change]) -> None:
        new = [NewTopic(c.resource, t.partitions, t.replication_factor, config=dict(t.config))
               for c in changes if c.action is Action.CREATE for t in [_payload(c, TopicPayload)]]
        self._send("CreateTopics", new,
                   lambda batch: self.admin.client.create_topics(batch, request_timeout=WRITE_TIMEOUT),
                   "create topics", benign={"TOPIC_ALREADY_EXISTS"}, key=lambda t: t.topic,
                   size=TOPIC_RECORDS, weight=lambda t: 1 + t.num_partitions + len(t.config), fullest_last=True)
        self._send("DeleteTopics", [c.resource for c in changes if c.action is Action.DELETE],
                   lambda batch: self.admin.client.delete_topics(batch, request_timeout=WRITE_TIMEOUT),
                   "delete topics", benign={"UNKNOWN_TOPIC_OR_PART", "UNKNOWN_TOPIC_ID"})

    def topic_configs(self, changes: list[Change]) -> None:
        self._alter_configs(ResourceType.TOPIC, _config_entries(changes), "alter topic configs")

    def group_configs(self, changes: list[Change]) -> None:
        self._alter_configs(ResourceType.GROUP, _config_entries(changes), "alter group settings")

    def _alter_configs(self, restype: ResourceType, entries: Mapping[str, list[ConfigEntry]], what: str) -> None:
        resources = [ConfigResource(restype, name, incremental_configs=e) for name, e in sorted(entries.items())]
        self._send("IncrementalAlterConfigs", resources,
                   lambda batch: self.admin.client.incremental_alter_configs(batch, request_timeout=WRITE_TIMEOUT),
                   what)

    def partitions(self, changes: list[Change]) -> None:
        grow = [NewPartitions(c.resource, _payload(c, PartitionCount).count) for c in changes
                if c.action is Action.UPDATE]
        # INVALID_PARTITIONS: already at that count (an earlier, interrupted run got there); the final
        # observation verifies it.
        self._send("CreatePartitions", grow,
                   lambda batch: self.admin.client.create_partitions(batch, request_timeout=WRITE_TIMEOUT),
                   "add partitions", benign={"INVALID_PARTITIONS"}, key=lambda p: p.topic)

    def replication(self, changes: list[Change]) -> None:
        from kraftform.kafka.kafka_python import TopicPartition

        targets: dict[Any, list[int]] = {}
        brokers: set[int] = set()
        for c in changes:
            move = _payload(c, Reassignment)
            brokers.update(move.brokers)
            targets.update({TopicPartition(c.resource, p): list(replicas)
                            for p, replicas in enumerate(move.target, move.first)})
        topics = sorted({c.resource for c in changes})
        rate = str(self.options.throttle_bytes_per_s)
        # Throttle only the moving topics' replication, at a cluster-wide rate, while replicas copy; the throttles
        # go on every way out (a refused batch, a timeout, Ctrl-C). Only a SIGKILL leaves them, and the next plan
        # shows them as drift to remove.
        try:
            self._broker_throttle(brokers, rate)
            self._alter_configs(ResourceType.TOPIC, {t: [
                ConfigEntry(k, "*", incremental_operation=AlterConfigOpType.SET) for k in THROTTLED_REPLICAS]
                for t in topics}, "throttle topics")
            self._reassign(targets)
        finally:
            self._unthrottle(topics, brokers)

    def _reassign(self, targets: dict[Any, list[int]]) -> None:
        with kafka_python_admin(self.connection, self.admin.requests) as client:
            self.admin.requests["AlterPartitionReassignments"] += 1
            errors = {tp: e for tp, e in client.alter_partition_reassignments(targets).items() if e is not None}
            if errors:
                raise KafkaRequestFailed("reassignment refused: " + "; ".join(
                    f"{tp.topic}-{tp.partition}: {e.__name__}" for tp, e in sorted(errors.items())[:10]))

            def settled() -> None:
                self.admin.requests["ListPartitionReassignments"] += 1
                moving = client.list_partition_reassignments(list(targets))
                if moving:
                    self.progress(f"    {len(moving)} partition(s) still moving ...")
                    raise NotYet(f"{len(moving)} partition(s) still moving; they keep moving in the background: "
                                 f"run apply again later")

            poll("the replica reassignment", self.options.reassignment_timeout_s, settled, interval=1.0)

    def _unthrottle(self, topics: list[str], brokers: set[int]) -> None:
        """Both kinds of throttle removed, each attempted even when the other fails (a failure is listed with
        the apply's failures, and the next plan shows what is left)."""
        try:
            self._alter_configs(ResourceType.TOPIC, {t: [
                ConfigEntry(k, None, incremental_operation=AlterConfigOpType.DELETE) for k in THROTTLED_REPLICAS]
                for t in topics}, "remove topic throttles")
        finally:
            self._broker_throttle(brokers, None)

    def _broker_throttle(self, brokers: set[int], rate: str | None) -> None:
        """Set (or with None remove) the replication throttle rate on every broker: broker configs go to
        their own broker, one request each."""
        op = AlterConfigOpType.SET if rate is not None else AlterConfigOpType.DELETE
        for broker in sorted(brokers):
            self._alter_configs(ResourceType.BROKER, {str(broker): [
                ConfigEntry(k, rate, incremental_operation=op) for k in THROTTLE_RATES]}, "replication throttle")

    # --- brokers -------------------------------------------------------------------------------------
    def broker_configs(self, changes: list[Change]) -> None:
        """Dynamic broker settings, set (or removed) with one IncrementalAlterConfigs per broker; the brokers
        take them live."""
        entries: dict[str, list[ConfigEntry]] = defaultdict(list)
        for c in changes:
            assert c.key is not None
            setting = _payload(c, BrokerSetting)
            op = AlterConfigOpType.DELETE if setting.value is None else AlterConfigOpType.SET
            entries[str(setting.broker)].append(
                ConfigEntry(c.key, setting.value, incremental_operation=op))
        for broker, settings in sorted(entries.items()):  # librdkafka: one BROKER resource per request
            self._alter_configs(ResourceType.BROKER, {broker: settings}, f"alter the settings of broker {broker}")

    def features(self, changes: list[Change]) -> None:
        """Feature levels finalised, raised or safely lowered (UpdateFeatures, through kafka-python:
        confluent-kafka has no call for it); the controller answers per feature."""
        updates: dict[str, Any] = {}
        for c in changes:
            target = _payload(c, FeatureLevel)
            updates[c.resource] = ("SAFE_DOWNGRADE", target.level) if target.downgrade else target.level
        with kafka_python_admin(self.connection, self.admin.requests) as client:
            self.admin.requests["UpdateFeatures"] += 1
            results = client.update_features(updates)
        for feature, result in sorted(results.items()):
            if result != "OK":
                self.failures.append(Failure(feature, "finalise the feature level", str(result), KafkaRequestFailed))

    # --- access --------------------------------------------------------------------------------------
    def acls(self, changes: list[Change]) -> None:
        create = [_confluent_binding(_payload(c, model.AclBinding)) for c in changes if c.action is Action.CREATE]
        self._send("CreateAcls", create,
                   lambda batch: self.admin.client.create_acls(batch, request_timeout=WRITE_TIMEOUT), "create ACLs")
        delete = [_confluent_binding(_payload(c, model.AclBinding), AclBindingFilter) for c in changes
                  if c.action is Action.DELETE]
        self._send("DeleteAcls", delete,
                   lambda batch: self.admin.client.delete_acls(batch, request_timeout=WRITE_TIMEOUT), "delete ACLs")

    def quotas(self, changes: list[Change]) -> None:
        alterations: dict[model.QuotaEntity, dict[str, float | None]] = defaultdict(dict)
        for c in changes:
            assert c.key is not None
            quota = _payload(c, QuotaValue)
            alterations[quota.entity][c.key] = quota.value
        with kafka_python_admin(self.connection, self.admin.requests) as client:
            self.admin.requests["AlterClientQuotas"] += 1
            alter_quotas(client, alterations)

    #: The order steps run in. Broker settings first (new topics then get the brokers' new defaults). ACLs and
    #: quotas go before topics: a broker applies committed metadata in order,
    #: and the ACLs behind 4,000 new topics waited for their 12,000 replicas to be created (visible to
    #: DescribeAcls 29 s after they were written, against 1 s when written first). Granting on a topic
    #: that does not exist yet is harmless.
    STEPS: Mapping[Kind, Callable[[Applier, list[Change]], None]] = {
        Kind.FEATURE: features, Kind.BROKER_CONFIG: broker_configs, Kind.USER: users, Kind.ACL: acls,
        Kind.QUOTA: quotas, Kind.TOPIC: topics, Kind.TOPIC_CONFIG: topic_configs,
        Kind.PARTITIONS: partitions, Kind.REPLICATION: replication, Kind.GROUP_CONFIG: group_configs}


def _config_entries(changes: list[Change]) -> dict[str, list[ConfigEntry]]:
    """Resource name -> its settings to set (or delete: a None value) in one IncrementalAlterConfigs."""
    entries: dict[str, list[ConfigEntry]] = defaultdict(list)
    for c in changes:
        assert c.key is not None
        value = _payload(c, ConfigValue).value
        op = AlterConfigOpType.DELETE if value is None else AlterConfigOpType.SET
        entries[c.resource].append(ConfigEntry(c.key, value, incremental_operation=op))
    return entries


def _mechanism(name: str) -> ScramMechanism:
    return ScramMechanism[name.replace("-", "_")]


def _confluent_binding(b: model.AclBinding, cls: type = AclBinding) -> Any:
    name = "kafka-cluster" if b.resource_type == "cluster" else b.resource_name
    return cls(_RESOURCE_TYPES[b.resource_type], name, _PATTERNS[b.pattern_type], b.principal, b.host,
               AclOperation[b.operation.upper()], AclPermissionType[b.permission.upper()])
