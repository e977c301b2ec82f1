"""Read a live cluster into a `ClusterState` with a number of Admin requests that does not grow with it.

One describe_cluster (brokers and racks), one metadata read (topics, partitions, replicas), describe_configs
in batches of `CONFIG_BATCH` topics, one describe_acls, one describe_user_scram_credentials and one
DescribeClientQuotas. Tools that send one describe_configs per topic need thousands of round trips for
thousands of topics; this needs a handful (see docs/benchmarks.md).

Only overrides set on the topic itself (source DYNAMIC_TOPIC_CONFIG) count as topic config: broker and
Kafka defaults are not drift. The defaults are kept apart, so a removed override can be compared with the
value the topic will fall back to.
"""

from __future__ import annotations

import concurrent.futures
import functools
import gc
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ConfigResource,
    ConfigSource,
    ResourcePatternType,
    ResourceType,
)

from kraftform.cluster.connection import Connection
from kraftform.errors import AuthenticationFailed, ConnectionFailed, KraftformError
from kraftform.kafka.admin import ANY_BROKER, TIMEOUT, Admin, Requests, batches, kafka_python_admin
from kraftform.kafka.quotas import describe_quotas
from kraftform.plan.state import ClusterState, TopicState, UserState
from kraftform.specset.model import AclBinding, QuotaEntity
from kraftform.waiting import NotYet, poll

#: Topics per DescribeConfigs request: large enough to keep requests few, small enough for any broker.
CONFIG_BATCH = 1000
#: Up to this many named topics are read one Metadata request each; more are read in one whole-cluster request.
SINGLE_TOPIC_READS = 4

#: Kafka's ACL resource and pattern types <-> kraftform's names (apply uses the inverse).
RESOURCE_TYPES = {ResourceType.TOPIC: "topic", ResourceType.GROUP: "group", ResourceType.BROKER: "cluster",
                  ResourceType.TRANSACTIONAL_ID: "transactional_id"}
PATTERN_TYPES = {ResourcePatternType.LITERAL: "literal", ResourcePatternType.PREFIXED: "prefixed"}


@dataclass(frozen=True)
class Observation:
    state: ClusterState
    requests: Requests
    #: Bindings kraftform cannot represent with confluent-kafka (delegation-token or user resources).
    skipped_acls: int = 0


def topics_per_broker(connection: Connection, names: Collection[str], admin: Admin | None = None
                      ) -> dict[int, frozenset[str]]:
    """Which of `names` each broker's metadata holds. Brokers apply committed metadata each at its own pace (one
    deleting or creating a thousand replicas publishes the records behind them) and a client may ask any of them,
    so one broker's answer says nothing of the next: an apply that deleted 1,500 topics read back an empty plan
    from one broker while another still listed some of them."""
    from kraftform.kafka.kafka_python import MetadataRequest

    requests = admin.requests if admin is not None else Requests()
    wanted = sorted(set(names))
    request = MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name=n) for n in wanted],
                              allow_auto_topic_creation=False)
    with kafka_python_admin(connection, requests) as client:
        manager = client._manager

        async def ask(node_id: int) -> Any:
            return await manager.send(request, node_id=node_id)

        found: dict[int, frozenset[str]] = {}
        for broker in sorted(manager.cluster.brokers(), key=lambda b: b.node_id):
            requests["Metadata (each broker)"] += 1
            response = manager.run(ask, broker.node_id)
            found[broker.node_id] = frozenset(t.name for t in response.topics if not t.error_code)
        return found


def _ask_configs(admin: Admin, names: Collection[str]) -> dict[str, Any]:
    """DescribeConfigs of `names` sent (in batches), not awaited: topic name -> its future."""
    asked: dict[str, Any] = {}
    for batch in batches(sorted(names), CONFIG_BATCH):
        admin.requests["DescribeConfigs"] += 1
        futures = admin.client.describe_configs([ConfigResource(ResourceType.TOPIC, n) for n in batch],
                                                request_timeout=TIMEOUT)
        asked.update({resource.name: future for resource, future in futures.items()})
    return asked


def _topics(admin: Admin, only: Collection[str] | None, configs_of: Callable[[str], bool] | None = None,
            known: Collection[str] = ()) -> tuple[dict[str, TopicState], dict[str, str]]:
    """Every topic's shape and, of those `configs_of` accepts (all by default), its settings: a plan reads the
    settings of the topics it manages, not of the thousands beside them it leaves alone. One topic is read even
    when none is accepted, for the brokers' topic defaults it reports. The settings of `known` topics (the
    declared ones) are asked for before the metadata answers, the other topics' once it has."""
    early = _ask_configs(admin, known) if configs_of is not None and known else {}
    # Metadata names one topic or all of them: a few topics are read one request each, more in one request.
    wanted = None if only is None else set(only)
    if wanted is not None and len(wanted) <= SINGLE_TOPIC_READS:
        found = [admin.metadata(topic=n).topics for n in sorted(wanted)]
    else:
        found = [admin.metadata().topics]
    shapes: dict[str, tuple[int, int, tuple[tuple[int, ...], ...]]] = {}
    for name, topic in ((n, t) for metadata in found for n, t in metadata.items()):
        if topic.error is not None or (wanted is not None and name not in wanted):
            continue
        assignment = tuple(tuple(topic.partitions[p].replicas) for p in sorted(topic.partitions))
        # During a reassignment a partition lists old and new replicas; the usual count is the factor.
        replication = Counter(len(r) for r in assignment).most_common(1)[0][0] if assignment else 0
        shapes[name] = (len(assignment), replication, assignment)
    read = set(shapes) if configs_of is None else {n for n in shapes if configs_of(n)}
    if not read and shapes:
        read = {min(shapes)}
    asked = {**early, **_ask_configs(admin, read - set(early))}
    overrides: dict[str, dict[str, str]] = {name: {} for name in shapes}
    defaults: dict[str, str] = {}
    late: set[str] = set()
    for round_ in (1, 2):
        for name, future in sorted(asked.items()):
            admin.settle(future, f"describe configs of topic {name!r}", on=ANY_BROKER)
            try:
                entries = future.result()
            except KafkaException as exc:
                if exc.args[0].name() != "UNKNOWN_TOPIC_OR_PART":
                    raise admin.failure(f"describe configs of topic {name!r}", exc) from None
                if name in read and round_ == 1 and name in early:
                    late.add(name)  # created after it was asked for: asked again below
                else:
                    overrides.pop(name, None)  # deleted since the metadata read, or never there
                continue
            if name not in shapes:
                continue  # declared, not there yet: nothing to read
            for key, entry in entries.items():
                if entry.value is None:
                    continue
                if entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value:
                    overrides[name][key] = entry.value
                else:
                    defaults.setdefault(key, entry.value)
        if not late:
            break
        asked, late = _ask_configs(admin, late), set()
    topics = {n: TopicState(n, shapes[n][0], shapes[n][1], overrides[n], shapes[n][2]) for n in overrides}
    return topics, defaults


def _acls(admin: Admin) -> tuple[frozenset[AclBinding], int]:
    admin.requests["DescribeAcls"] += 1
    anything: Any = None  # None matches any name, principal and host (the stubs say str)
    everything = AclBindingFilter(ResourceType.ANY, anything, ResourcePatternType.ANY, anything, anything,
                                  AclOperation.ANY, AclPermissionType.ANY)
    found = admin.ask(lambda: admin.client.describe_acls(everything, request_timeout=TIMEOUT), "describe ACLs")
    bindings, skipped = set(), 0
    for b in found:
        if b.restype not in RESOURCE_TYPES or b.resource_pattern_type not in PATTERN_TYPES:
            skipped += 1
            continue
        bindings.add(AclBinding(b.principal, RESOURCE_TYPES[b.restype], b.name, PATTERN_TYPES[b.resource_pattern_type],
                                b.operation.name.lower(), b.permission_type.name.lower(), b.host))
    return frozenset(bindings), skipped


def acl_bindings(connection: Connection) -> frozenset[AclBinding]:
    """Every ACL binding the cluster holds (one DescribeAcls): what a check of someone's grants reads."""
    return _acls(Admin(connection))[0]


def _users(admin: Admin) -> dict[str, UserState]:
    admin.requests["DescribeUserScramCredentials"] += 1
    # One future for all users: the stubs say one per user.
    send: Any = functools.partial(admin.client.describe_user_scram_credentials, request_timeout=TIMEOUT)
    described = admin.ask(send, "describe SCRAM users")
    users = {}
    for name, description in described.items():
        infos = sorted(description.scram_credential_infos, key=lambda i: i.mechanism.name, reverse=True)
        if infos:  # SHA-512 first when a user has both
            users[name] = UserState(name, infos[0].mechanism.name.replace("_", "-"), infos[0].iterations)
    return users


def _broker_configs(admin: Admin, brokers: Collection[int], keys: Collection[str]
                    ) -> tuple[dict[int, dict[str, str]], dict[int, dict[str, str]], dict[str, str]]:
    """Each broker's settings, one DescribeConfigs per broker (a broker describes its own): the effective
    value of `keys`, the values set dynamically on that broker, and the dynamic cluster-wide defaults (which
    every broker reports as the source of the values they set). Neither client library can address the cluster
    default resource itself, so the defaults are read from what the brokers report."""
    admin.requests["DescribeConfigs (brokers)"] += len(brokers)
    # librdkafka takes one BROKER resource per call; the calls go out together and are awaited after.
    futures = {resource: future for b in sorted(brokers) for resource, future in admin.client.describe_configs(
        [ConfigResource(ResourceType.BROKER, str(b))], request_timeout=TIMEOUT).items()}
    effective: dict[int, dict[str, str]] = {}
    dynamic: dict[int, dict[str, str]] = {}
    defaults: dict[str, str] = {}
    for resource, future in futures.items():
        broker = int(resource.name)
        entries = admin.wait(future, f"describe the settings of broker {broker}", on=broker)
        effective[broker] = {k: entries[k].value for k in keys if k in entries and entries[k].value is not None}
        dynamic[broker] = {k: e.value for k, e in entries.items()
                           if e.value is not None and e.source == ConfigSource.DYNAMIC_BROKER_CONFIG.value}
        defaults |= {k: e.value for k, e in entries.items()
                     if e.value is not None and e.source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value}
    return effective, dynamic, defaults


def group_configs(admin: Admin, groups: Collection[str]) -> dict[str, dict[str, str]]:
    """Each group's settings set on its GROUP resource (not the brokers' defaults it would fall back to)."""
    found: dict[str, dict[str, str]] = {}
    for batch in batches(sorted(groups), CONFIG_BATCH):
        admin.requests["DescribeConfigs (groups)"] += 1
        futures = admin.client.describe_configs([ConfigResource(ResourceType.GROUP, g) for g in batch],
                                                request_timeout=TIMEOUT)
        for resource, future in futures.items():
            entries = admin.wait(future, f"describe the settings of group {resource.name!r}", on=ANY_BROKER)
            found[resource.name] = {k: e.value for k, e in entries.items()
                                    if e.value is not None and e.source == ConfigSource.GROUP_CONFIG.value}
    return found


def _feature_verdicts(client: Any, admin: Admin, declared: Mapping[str, int],
                      finalised: Mapping[str, int]) -> dict[str, str]:
    """Kafka's answer to moving each declared feature that differs, asked with validate_only (nothing changes),
    one request per feature (Kafka fails a whole request for one refused feature). A login that may not alter
    the cluster gets no verdicts: the plan then judges by its own rules."""
    from kraftform.kafka.kafka_python import KafkaError as PyKafkaError

    verdicts: dict[str, str] = {}
    for name, level in declared.items():
        now = finalised.get(name, 0)
        if level == now:
            continue
        admin.requests["UpdateFeatures (validate only)"] += 1
        try:
            answer = client.update_features({name: ("SAFE_DOWNGRADE", level) if level < now else level},
                                            validate_only=True)
            verdicts[name] = str(answer.get(name, "OK"))
        except PyKafkaError as exc:
            verdicts[name] = _kafka_reason(exc)
    return {name: said for name, said in verdicts.items() if "AUTHORIZATION" not in said.upper()}


def _kafka_reason(exc: Exception) -> str:
    """The broker's own error message out of kafka-python's exception text (which also dumps the request)."""
    found = re.search(r"error_message=(['\"])(.*?)\1\)", str(exc))
    if found is None:
        return type(exc).__name__
    return found.group(2).removeprefix("The update failed for all features since the following feature had an "
                                       "error: ")


Quotas = dict[QuotaEntity, dict[str, float]]


def _quotas_and_features(connection: Connection, admin: Admin, features: Mapping[str, int]
                         ) -> tuple[Quotas, dict[str, int], dict[str, int], dict[str, str]]:
    """What only kafka-python reads: every client quota, the finalised and supported feature levels, and Kafka's
    verdict on each declared level that differs."""
    with kafka_python_admin(connection, admin.requests) as client:
        admin.requests["DescribeClientQuotas"] += 1
        quotas = describe_quotas(client)
        admin.requests["DescribeFeatures"] += 1
        described = client.describe_features()
        finalised = {k: int(v["finalized"][1]) for k, v in described.items() if "finalized" in v}
        supported = {k: int(v["supported"][1]) for k, v in described.items() if "supported" in v}
        return quotas, finalised, supported, _feature_verdicts(client, admin, features, finalised)


#: How long a read through kafka-python is tried again when its broker drops the connection.
PY_READ_RETRY_S = 30.0
#: How long after its start an observation that failed once the cluster had answered is made again: a stopping
#: broker leaves the metadata within a session timeout (9 s by default), a request waiting on it times out in 30.
LEAVING_S = 45.0


def _quotas_and_features_retried(connection: Connection, admin: Admin, features: Mapping[str, int],
                                 stop: threading.Event
                                 ) -> tuple[Quotas, dict[str, int], dict[str, int], dict[str, str]]:
    """`_quotas_and_features`, again while the connection fails: kafka-python sends each request to one broker
    of its choosing, and one a roll is restarting (or an interrupted roll left stopped, which the next apply
    reads before it checks that node) drops it; the next attempt goes to another broker. A refused login is not
    retried, nor is one whose observation is over (`stop`: another read failed)."""

    def once() -> tuple[Quotas, dict[str, int], dict[str, int], dict[str, str]]:
        if stop.is_set():
            raise ConnectionFailed("client quotas and feature levels: not read (another read failed)")
        try:
            return _quotas_and_features(connection, admin, features)
        except AuthenticationFailed:
            raise
        except ConnectionFailed as exc:
            raise NotYet(str(exc)) from None

    return poll("client quotas and feature levels (kafka-python)", PY_READ_RETRY_S, once, interval=1.0,
                error=ConnectionFailed)


def observe(connection: Connection, topics_only: Collection[str] | None = None,
            admin: Admin | None = None, broker_keys: Collection[str] = (),
            features: Mapping[str, int] | None = None, groups: Collection[str] = (),
            topic_configs_of: Callable[[str], bool] | None = None, known_topics: Collection[str] = ()
            ) -> Observation:
    """The whole cluster, in bulk; with `topics_only`, just those topics and the brokers (no ACLs, users,
    quotas or broker settings): what a caller that manages only those topics needs, in requests that do not
    grow with the cluster (a Pulumi topic resource reads its own topic, not every topic's configs). Broker
    settings: what each broker has set dynamically, and its effective value of `broker_keys`. `features`: the
    declared levels, each one that differs asked of Kafka with a validate-only UpdateFeatures (what it would
    refuse, and why, is in the plan before anything is sent). `groups`: the declared groups, whose settings
    (GROUP resources) are read; no other group's are. `topic_configs_of`: the topics whose settings are read
    (the rest are seen with no settings: a plan leaves them alone); all by default. `known_topics`: topics among
    those whose settings are asked for at once, beside the metadata read (the declared ones)."""
    admin = admin or Admin(connection)  # a caller's client, already logged in, saves a TLS+SCRAM session
    started = time.monotonic()
    while True:
        admin.requests["DescribeCluster"] += 1
        # First, alone: it is the login, and a client config that cannot work fails here within seconds, with its
        # cause, before any other request waits out its timeout.
        cluster = admin.ask(functools.partial(admin.client.describe_cluster, request_timeout=TIMEOUT),
                            "describe the cluster")
        brokers = {node.id: node.rack for node in cluster.nodes}
        try:
            return _observe_brokers(connection, admin, brokers, topics_only, broker_keys, features, groups,
                                    topic_configs_of, known_topics)
        except AuthenticationFailed:
            raise
        except ConnectionFailed:
            # The cluster answered, then a read failed: a broker is leaving (stopping in a roll, or killed) and
            # stays in the metadata until its controlled shutdown or its session ends, refusing connections
            # (librdkafka may even wait on it as "the controller"). Read again, with a new client's metadata.
            if time.monotonic() - started > LEAVING_S:
                raise
        # The client given up may sit in a reference cycle (a failure's traceback): freed here, in this thread,
        # not by a collection that a librdkafka thread happens to start, which would abort the process.
        admin = Admin(connection, admin.requests)
        gc.collect()
        time.sleep(1.0)


def _observe_brokers(connection: Connection, admin: Admin, brokers: dict[int, str | None],
                     topics_only: Collection[str] | None, broker_keys: Collection[str],
                     features: Mapping[str, int] | None, groups: Collection[str],
                     topic_configs_of: Callable[[str], bool] | None, known_topics: Collection[str]) -> Observation:
    """`observe` once the cluster has answered with its brokers."""
    if topics_only is not None:
        topics, defaults = _topics(admin, topics_only, topic_configs_of)
        return Observation(ClusterState(topics=topics, topic_defaults=defaults, brokers=brokers), admin.requests)
    # The other reads are independent: each waits on its own answers (librdkafka's threads, or kafka-python's
    # connection), so they go out together and the observation takes as long as the slowest, not the sum.
    stop = threading.Event()  # one read failed: the kafka-python one stops retrying, the observation is over
    with ThreadPoolExecutor(max_workers=4) as reads:
        acl_read = reads.submit(_acls, admin)
        user_read = reads.submit(_users, admin)
        python_read = reads.submit(_quotas_and_features_retried, connection, admin, features or {}, stop)
        broker_read = reads.submit(_broker_configs, admin, brokers, broker_keys)
        try:
            topics, defaults = _topics(admin, topics_only, topic_configs_of, known_topics)
            every: list[concurrent.futures.Future[Any]] = [acl_read, user_read, python_read, broker_read]
            done, _ = concurrent.futures.wait(every, return_when=concurrent.futures.FIRST_EXCEPTION)
            failed = next((e for e in (r.exception() for r in done) if e is not None), None)
            if isinstance(failed, KraftformError):
                # The first failure, without waiting on the others' retries; a new exception, as the future's
                # own would link this frame (its futures, the client) into a cycle only the collector frees.
                raise type(failed)(str(failed)) from None
            if failed is not None:
                raise failed
            (acls, skipped), users = acl_read.result(), user_read.result()
            quotas, finalised, supported, verdicts = python_read.result()
            settings, dynamic, broker_defaults = broker_read.result()
        except BaseException:
            stop.set()
            raise
    state = ClusterState(topics=topics, acls=acls, quotas=quotas, users=users, topic_defaults=defaults,
                         brokers=brokers, broker_settings=settings, broker_dynamic=dynamic,
                         broker_defaults=broker_defaults,
                         features=finalised, supported_features=supported, feature_verdicts=verdicts,
                         group_configs=group_configs(admin, groups))
    return Observation(state, admin.requests, skipped)
