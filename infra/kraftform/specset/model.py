"""The desired state, as frozen dataclasses built from a validated spec directory.

Values are already normalized (sizes in bytes, durations in milliseconds, topic configs in Kafka's
string form) so planners compare like with like. Every object keeps the `Location` it came from, outside
equality, so a check can point at the line that caused it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from kraftform.errors import Location

NOWHERE = Location("<builtin>")
#: JVM heaps of the nodes kraftform runs, unless `cluster.resources` says otherwise.
DEFAULT_BROKER_HEAP = 384 * 1024 * 1024
DEFAULT_CONTROLLER_HEAP = 160 * 1024 * 1024
DEFAULT_ENTITY = "<default>"
#: The principal every node's certificate maps to (a super user); kraftform's nodes authenticate as it.
NODE_PRINCIPAL = "kraftform-node"
#: SCRAM or PLAIN users on the controller listener (controller_auth: plain).
CONTROLLER_USER = "kraftform-controller"
#: The SCRAM user brokers spoke to each other as before the inter-broker listener became mutual TLS; no
#: longer created or a super user, but a cluster made before may still hold it, so it is never managed.
BROKER_USER = "kraftform-broker"
#: One SCRAM user per mechanism, never deleted, whose name's Java hash is 0 (tests/unit/specset/test_model.py).
#: A restarting Kafka node (through 4.4) rebuilds its SCRAM users from one batch of changes kept in a HashMap,
#: and when the first user it meets there was deleted, it drops that mechanism's users met after it
#: (ScramDelta.apply removes the mechanism's map once empty and goes on filling the removed map): a broker
#: restarted after a user was deleted refused the admin's login. A name hashing to 0 is met first at every table
#: size, so with this user present the map is never empty. Created with the cluster (`--add-scram`), or by an
#: apply on a cluster without it (docs/security.md).
SCRAM_ANCHORS = {"SCRAM-SHA-256": "kraftform-anchor-sha-256-ahlxfuua",
                 "SCRAM-SHA-512": "kraftform-anchor-sha-512-acywjyik"}
RESERVED_USERS = (NODE_PRINCIPAL, CONTROLLER_USER, BROKER_USER, *SCRAM_ANCHORS.values())

Settings = Mapping[str, str]


def _loc() -> Location:
    return field(default=NOWHERE, compare=False, repr=False)


@dataclass(frozen=True)
class SecretRef:
    """Where a secret is read from at apply time; the spec never holds the secret itself."""

    source: Literal["env", "file", "pulumi_config"]
    name: str

    def __str__(self) -> str:
        return f"{self.source}:{self.name}"


@dataclass(frozen=True)
class ExternalListener:
    enabled: bool = False
    host: str = "localhost"
    base_port: int = 19092


@dataclass(frozen=True)
class Placement:
    """How replicas move when brokers join or leave (`plan.placement.target_assignment`)."""

    #: Even each topic across the brokers too, at the price of moving skew that was there before the change.
    even_topics: bool = False


@dataclass(frozen=True)
class Security:
    sasl_mechanism: str = "SCRAM-SHA-512"
    controller_auth: Literal["mtls", "plain"] = "mtls"
    admin_user: str = "kraftform-admin"
    external_listener: ExternalListener = ExternalListener()


@dataclass(frozen=True)
class ClusterDefaults:
    """Broker-side defaults for topics that do not set their own. They depend on the broker count, so they
    are made by `for_brokers` (the one place that says what they are), never by field defaults."""

    partitions: int
    replication_factor: int
    min_insync_replicas: int

    @classmethod
    def for_brokers(cls, brokers: int, partitions: int = 1, replication_factor: int | None = None,
                    min_insync_replicas: int | None = None) -> ClusterDefaults:
        """Unset: replication factor min(3, brokers); min.insync.replicas 2 when replicated, else 1."""
        rf = min(3, brokers) if replication_factor is None else replication_factor
        isr = (2 if rf > 1 else 1) if min_insync_replicas is None else min_insync_replicas
        return cls(partitions, rf, isr)


@dataclass(frozen=True)
class Conventions:
    """House rules for `kraftform lint`: a topic-name pattern and retention bounds (milliseconds)."""

    topic_name: str | None = None
    min_retention_ms: int | None = None
    max_retention_ms: int | None = None


@dataclass(frozen=True)
class ManagedScope:
    """What kraftform may change or delete: topics declared or under these prefixes; ACLs, quotas and users of
    declared principals (or of all with `acl_principals: all`); and, with `acl_resources: managed`, of those
    ACLs only the ones on resources kraftform manages, so grants another tool gives the same principal on
    other teams' topics are left alone."""

    topic_prefixes: tuple[str, ...] = ()
    acl_principals: Literal["declared", "all"] = "declared"
    acl_resources: Literal["all", "managed"] = "all"

    def covers_topic(self, name: str) -> bool:
        return any(name.startswith(p) for p in self.topic_prefixes)


@dataclass(frozen=True)
class Load:
    """Expected load for sizing; bytes, bytes per second and milliseconds."""

    messages_per_day: int
    average_message_bytes: int
    retention_ms: int
    replication_factor: int | None = None
    peak_write_bytes_per_s: int | None = None
    consumer_groups: int = 1
    broker_network_bytes_per_s: int | None = None
    broker_write_capacity_bytes_per_s: int | None = None
    partition_throughput_bytes_per_s: int | None = None
    controller_failures_tolerated: int = 1


@dataclass(frozen=True)
class SparkSpec:
    """Where the consumers' Spark jobs run: `local` (each consumer its own local master), `standalone` (a
    Spark standalone master and `workers` workers kraftform runs in Docker beside the cluster), or the URL of
    an existing master (spark://, k8s://, yarn) that kraftform did not create."""

    master: str = "local"
    workers: int = 2
    worker_cores: int = 2
    worker_memory_bytes: int = 2 * 1024**3
    #: On a cluster with hosts: the hosts that run a standalone worker (none given: every host); the master and the
    #: consumers' containers (their drivers) run on the first.
    hosts: tuple[str, ...] = ()
    #: On a cluster with hosts: a directory every Spark host mounts, at this same path, from one shared file system
    #: (NFS, ...): checkpoints, state and Parquet output, which executors on one host write and the driver on another
    #: reads. "": each container's volume on its own host (enough for a local master).
    shared_dir: str = ""


#: Node ids a host may list; brokers are 1..99 and dedicated controllers 1001..1009 on a cluster with hosts, whose
#: nodes each listen on ports of their own on their host's address (`cluster.hosts.host_ports`).
MAX_BROKERS_ON_HOSTS = 99


@dataclass(frozen=True)
class DockerTls:
    """The client certificate a `tcp://` Docker endpoint asks for (PEM files, absolute once built): the Docker API
    over TCP is root on the host, and without TLS client certificates anyone who reaches the port is."""

    ca: str
    cert: str
    key: str


@dataclass(frozen=True)
class Host:
    """A machine with a Docker engine that runs some of the cluster's nodes: those of its racks and the node ids
    it names. Its nodes listen on, and advertise, its address."""

    name: str
    #: unix:///path, tcp://host:port (with `tls`) or ssh://user@host[:port].
    docker: str
    address: str
    racks: tuple[str, ...] = ()
    nodes: tuple[int, ...] = ()
    tls: DockerTls | None = None
    location: Location = _loc()


@dataclass(frozen=True)
class ClusterSpec:
    name: str
    brokers: int
    kafka_version: str
    mode: Literal["dedicated", "combined"] = "dedicated"
    controllers: int = 3
    racks: tuple[str, ...] = ()
    storage_per_broker_bytes: int | None = None
    placement: Placement = Placement()
    broker_heap_bytes: int = DEFAULT_BROKER_HEAP
    controller_heap_bytes: int = DEFAULT_CONTROLLER_HEAP
    #: Every broker's settings beyond what kraftform renders, in Kafka's string form: dynamic ones applied live
    #: through the Admin protocol, read-only ones rendered into each broker's server.properties.
    broker_config: Settings = field(default_factory=dict)
    #: Every controller's settings, rendered into their server.properties (a change rolls the controllers).
    controller_config: Settings = field(default_factory=dict)
    #: Node name -> settings over broker_config / controller_config for that node alone (rendered, so a change
    #: restarts that node); dynamic broker settings are refused here.
    node_config: Mapping[str, Settings] = field(default_factory=dict)
    #: The Kafka release ("4.3") whose feature levels the cluster finalises; None: not managed.
    metadata_version: str | None = None
    #: Feature levels finalised one by one (group.version, share.version, ...), over metadata_version's; a
    #: feature not named here is not managed.
    features: Mapping[str, int] = field(default_factory=dict)
    #: None stands for `ClusterDefaults.for_brokers(brokers)`, filled in on construction.
    defaults: ClusterDefaults = None  # type: ignore[assignment]
    security: Security = Security()
    managed_scope: ManagedScope = ManagedScope()
    conventions: Conventions = Conventions()
    load: Load | None = None
    spark: SparkSpec = SparkSpec()
    #: The machines the nodes run on (one Docker engine each); empty: one machine (local JVMs or one engine).
    hosts: tuple[Host, ...] = ()
    #: Hosts whose loss `validate` requires every topic to stay writable and the quorum alive through (0 or 1).
    host_failures_tolerated: int = 1
    #: JVMs that start fast rather than run fast (only the client compiler): for clusters that live minutes.
    #: Not a spec field: `kraftform.testing` sets it on its test clusters.
    quick_start: bool = False
    location: Location = _loc()

    def __post_init__(self) -> None:
        if self.defaults is None:
            object.__setattr__(self, "defaults", ClusterDefaults.for_brokers(self.brokers))

    def min_insync(self, topic: TopicSpec) -> int:
        """The min.insync.replicas a topic gets: its own override, else the cluster's default."""
        return int(topic.config.get("min.insync.replicas", self.defaults.min_insync_replicas))

    def rack_of(self, broker_index: int) -> str | None:
        """Racks are assigned to brokers in turn, so replicas can spread across them."""
        return self.racks[broker_index % len(self.racks)] if self.racks else None


@dataclass(frozen=True)
class Profile:
    """Settings for each side of a Kafka pipeline, chosen by name for a trade-off."""

    name: str
    description: str = ""
    replication_factor: int | None = None
    topic: Settings = field(default_factory=dict)
    producer: Settings = field(default_factory=dict)
    consumer: Settings = field(default_factory=dict)
    broker: Settings = field(default_factory=dict)
    spark: Settings = field(default_factory=dict)
    location: Location = _loc()


@dataclass(frozen=True)
class TopicSpec:
    """A topic as kraftform will set it: `config` holds the effective overrides (profile, then topic)."""

    name: str
    partitions: int
    replication_factor: int
    config: Settings = field(default_factory=dict)
    profile: str | None = None
    description: str = ""
    owner: str | None = None
    expected_write_bytes_per_s: int | None = None
    location: Location = _loc()
    #: What declared it when the specs did not name it themselves ("Connect cluster 'x'"): its name is not a
    #: person's choice, so naming conventions and the managed scope's prefixes do not judge it.
    derived_from: str | None = None


AclResourceType = Literal["topic", "group", "cluster", "transactional_id", "delegation_token", "user"]


@dataclass(frozen=True, order=True)
class AclBinding:
    """One Kafka ACL binding, exactly as the Admin API stores it (one operation each)."""

    principal: str
    resource_type: str
    resource_name: str
    pattern_type: str
    operation: str
    permission: str
    host: str = "*"

    def grant(self) -> str:
        """The binding without its principal: `allow read on topic 'orders.' (prefixed)`."""
        pattern = "" if self.pattern_type == "literal" else f" ({self.pattern_type})"
        host = "" if self.host == "*" else f" from {self.host}"
        return f"{self.permission} {self.operation} on {self.resource_type} {self.resource_name!r}{pattern}{host}"

    def describe(self) -> str:
        return f"{self.principal}: {self.grant()}"


def named_groups(acls: Iterable[AclBinding | AclSpec]) -> set[str]:
    """The groups ACLs name: their literal group resources (a prefix or the wildcard names no group)."""
    return {a.resource_name for a in acls
            if a.resource_type == "group" and a.pattern_type == "literal" and a.resource_name != "*"}


@dataclass(frozen=True)
class AclSpec:
    """One spec entry: several operations for one principal and resource."""

    principal: str
    resource_type: str
    resource_name: str
    operations: tuple[str, ...]
    pattern_type: str = "literal"
    permission: str = "allow"
    host: str = "*"
    location: Location = _loc()

    def bindings(self) -> tuple[AclBinding, ...]:
        return tuple(AclBinding(self.principal, self.resource_type, self.resource_name, self.pattern_type,
                                op, self.permission, self.host) for op in self.operations)


@dataclass(frozen=True)
class QuotaEntity:
    """user, client_id or both; `<default>` stands for Kafka's default entity of that kind."""

    user: str | None = None
    client_id: str | None = None

    def __lt__(self, other: QuotaEntity) -> bool:
        # Either field may be None, which plain tuple ordering cannot compare with a name.
        return (self.user or "", self.client_id or "") < (other.user or "", other.client_id or "")

    def describe(self) -> str:
        parts = [f"user={self.user}" if self.user else "", f"client-id={self.client_id}" if self.client_id else ""]
        return ",".join(p for p in parts if p)


@dataclass(frozen=True)
class QuotaSpec:
    entity: QuotaEntity
    values: Mapping[str, float]
    location: Location = _loc()


@dataclass(frozen=True)
class UserSpec:
    name: str
    password: SecretRef
    mechanism: str = "SCRAM-SHA-512"
    iterations: int = 8192
    password_version: int = 1
    description: str = ""
    location: Location = _loc()


@dataclass(frozen=True)
class PrincipalSpec:
    name: str
    description: str = ""
    location: Location = _loc()


@dataclass(frozen=True)
class SinkSpec:
    type: Literal["kafka", "parquet", "console", "noop"]
    path: str | None = None
    topic: str | None = None


@dataclass(frozen=True)
class ValueFormat:
    """How a consumer reads record values: JSON with a Spark DDL schema, Avro in the Confluent wire format (the
    schema: its topics' declared value schema, filled in when the specs are built), or the raw string."""

    format: Literal["json", "avro", "string"] = "string"
    schema: str | None = None


@dataclass(frozen=True)
class Watermark:
    column: str
    delay_ms: int


#: The trigger value that asks for Spark's Real-time Mode instead of micro-batches.
REALTIME = "realtime"


@dataclass(frozen=True)
class ConsumerSpec:
    """A streaming pipeline: topics -> parsed `input` view -> SQL and/or a Python transform -> sink."""

    name: str
    topics: tuple[str, ...]
    user: str
    sink: SinkSpec
    group_id_prefix: str
    profile: str = "balanced"
    #: Milliseconds between micro-batches, REALTIME, or None (the profile decides).
    trigger: int | str | None = None
    starting_offsets: Literal["earliest", "latest"] = "latest"
    max_offsets_per_trigger: int | None = None
    cores: int = 2
    value: ValueFormat = ValueFormat()
    watermark: Watermark | None = None
    query: str | None = None
    transform: str | None = None
    checkpoint: str | None = None
    options: Settings = field(default_factory=dict)
    description: str = ""
    location: Location = _loc()
    #: Where the query text starts (the line of its first character), for SQL errors.
    query_location: Location = _loc()


GroupType = Literal["consumer", "share", "streams"]


@dataclass(frozen=True)
class GroupReader:
    """A principal consuming through a declared group: granted read on the group and on `topics` (literal ACLs,
    added to `SpecSet.acls` when the specs are built)."""

    principal: str
    topics: tuple[str, ...]
    location: Location = _loc()


@dataclass(frozen=True)
class GroupSpec:
    """One consumer, share or streams group: its settings (a GROUP resource, over the brokers' group defaults)
    and the principals that read through it."""

    name: str
    config: Settings = field(default_factory=dict)
    description: str = ""
    location: Location = _loc()
    #: The protocol whose settings it takes (None: any).
    type: GroupType | None = None
    readers: tuple[GroupReader, ...] = ()

    def reader_acls(self) -> tuple[AclSpec, ...]:
        """The grants its readers need: read on the group, read on each topic (describe comes with read)."""
        return tuple(acl for r in self.readers for acl in (
            AclSpec(r.principal, "group", self.name, ("read",), location=r.location),
            *(AclSpec(r.principal, "topic", topic, ("read",), location=r.location) for topic in r.topics)))


@dataclass(frozen=True)
class EnvSecret:
    """A connector setting read from the workers' environment when a task starts (Kafka's
    EnvVarConfigProvider): the REST API, plans and logs hold `${env:NAME}` only."""

    name: str

    def __str__(self) -> str:
        return "${env:" + self.name + "}"


ConnectorState = Literal["running", "paused", "stopped"]
#: The clients a worker makes for a connector (a sink's consumer, a source's producer, either's admin client): a
#: connector with its own user overrides the login of each (Connect's `Principal` override policy).
CONNECTOR_CLIENTS = ("producer", "consumer", "admin")
#: Where the logins directory stands in a connector's config when no runtime has placed one (the offline diff).
LOGINS_PLACEHOLDER = "/kraftform/connect-logins"


def login_reference(logins: str, user: str) -> str:
    """A connector user's password as its config holds it: a reference the workers resolve when a task starts
    (Kafka's DirectoryConfigProvider reads `<logins>/<user>`), so the REST API, plans, logs and Kafka's config
    topic never hold the password."""
    return "${dir:" + logins + ":" + user + "}"


@dataclass(frozen=True)
class ConnectorSpec:
    name: str
    connector_class: str
    type: Literal["source", "sink"]
    topics: tuple[str, ...]
    tasks_max: int = 1
    state: ConnectorState = "running"
    config: Mapping[str, str | EnvSecret] = field(default_factory=dict)
    description: str = ""
    #: The declared SCRAM user its clients log in as instead of the workers' user, and that user's mechanism.
    user: str | None = None
    mechanism: str = "SCRAM-SHA-512"
    location: Location = _loc()

    @property
    def environment_names(self) -> tuple[str, ...]:
        """The environment variables it reads secrets from (`{env: NAME}`), in its settings' order."""
        return tuple(v.name for _, v in sorted(self.config.items()) if isinstance(v, EnvSecret))

    def rest_config(self, logins: str = LOGINS_PLACEHOLDER) -> dict[str, str]:
        """The config as Connect's REST API takes it: kraftform's fields as Connect's keys, secrets as
        references. `logins`: the directory the workers read connector users' passwords from (`login_reference`)."""
        out = {key: str(value) for key, value in self.config.items()}
        out |= {"name": self.name, "connector.class": self.connector_class, "tasks.max": str(self.tasks_max)}
        if self.type == "sink":
            out["topics"] = ",".join(self.topics)
        if self.user is not None:
            jaas = (f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{self.user}" '
                    f'password="{login_reference(logins, self.user)}";')
            for client in CONNECTOR_CLIENTS:
                out |= {f"{client}.override.sasl.jaas.config": jaas,
                        f"{client}.override.sasl.mechanism": self.mechanism}
        return out


@dataclass(frozen=True)
class ConnectPlugin:
    """A connector plugin from Maven Central, its jar's SHA-256 checked after download."""

    name: str
    maven: str
    sha256: str
    exclude: tuple[str, ...] = ()
    location: Location = _loc()


#: Each Connect worker's heap, unless its spec says otherwise.
DEFAULT_CONNECT_HEAP = 256 * 1024 * 1024


@dataclass(frozen=True)
class ConnectSpec:
    """A Kafka Connect cluster in distributed mode, its internal topics, and its connectors."""

    name: str
    user: str
    workers: int = 1
    rest_port: int = 18083
    #: The SASL mechanism of the workers' user.
    mechanism: str = "SCRAM-SHA-512"
    heap_bytes: int = DEFAULT_CONNECT_HEAP
    plugins: tuple[ConnectPlugin, ...] = ()
    topic_prefix: str = ""
    replication_factor: int = 3
    offsets_partitions: int = 25
    status_partitions: int = 5
    config: Settings = field(default_factory=dict)
    connectors: tuple[ConnectorSpec, ...] = ()
    description: str = ""
    location: Location = _loc()

    @property
    def connector_users(self) -> tuple[str, ...]:
        """The users connectors log in as of their own (`ConnectorSpec.user`)."""
        return tuple(sorted({c.user for c in self.connectors if c.user is not None}))

    @property
    def environment_names(self) -> tuple[str, ...]:
        """The environment variables its connectors read secrets from (`{env: NAME}`), each once."""
        return tuple(dict.fromkeys(name for c in self.connectors for name in c.environment_names))

    @property
    def internal_topics(self) -> dict[str, str]:
        """Role (config, offset, status: Connect's own words) -> topic name."""
        return {"config": f"{self.topic_prefix}configs", "offset": f"{self.topic_prefix}offsets",
                "status": f"{self.topic_prefix}status"}

    def derived_topics(self) -> tuple[TopicSpec, ...]:
        """The internal topics as the course and Connect's docs set them: compacted, the config topic with one
        partition (Connect refuses more), the offsets topic with many."""
        names = self.internal_topics
        partitions = {"config": 1, "offset": self.offsets_partitions, "status": self.status_partitions}
        return tuple(TopicSpec(names[role], partitions[role], self.replication_factor,
                               {"cleanup.policy": "compact"}, description=f"Kafka Connect {self.name}: {role}s",
                               location=self.location, derived_from=f"Connect cluster {self.name!r}")
                     for role in ("config", "offset", "status"))

    def derived_acls(self) -> tuple[AclSpec, ...]:
        """What its workers and connectors need: `worker_acls` and each connector's `connector_acls`."""
        return self.worker_acls() + tuple(a for c in self.connectors for a in self.connector_acls(c))

    def worker_acls(self) -> tuple[AclSpec, ...]:
        """The group, and the internal topics (their configs too: Connect checks they are compacted)."""
        user = f"User:{self.user}"
        return (AclSpec(user, "group", self.name, ("read",), location=self.location),
                *(AclSpec(user, "topic", topic, ("read", "write", "describe", "describe_configs"),
                          location=self.location) for topic in self.internal_topics.values()))

    def connector_acls(self, c: ConnectorSpec) -> tuple[AclSpec, ...]:
        """A sink's topics and its consumer group (`connect-<name>`: delete too, which a reset of its offsets sends),
        or a source's topics: for the connector's own user when it has one, else for the workers'."""
        user = f"User:{c.user or self.user}"
        if c.type == "sink":
            return (AclSpec(user, "group", f"connect-{c.name}", ("read", "delete"), location=c.location),
                    *(AclSpec(user, "topic", t, ("read", "describe"), location=c.location) for t in c.topics))
        return tuple(AclSpec(user, "topic", t, ("write", "describe"), location=c.location) for t in c.topics)


#: The registry's compatibility levels (Confluent's names, which Apicurio's compatible API takes too), from the
#: strictest to the loosest as a change of level reads: a move right loosens the check.
COMPATIBILITY_LEVELS = ("FULL_TRANSITIVE", "FULL", "BACKWARD_TRANSITIVE", "FORWARD_TRANSITIVE", "BACKWARD",
                        "FORWARD", "NONE")
SchemaType = Literal["AVRO", "JSON"]
#: How a topic's schemas are named in the registry (Confluent's subject name strategies).
SubjectNaming = Literal["topic", "record", "topic_record"]


@dataclass(frozen=True)
class SubjectSpec:
    """One subject of the schema registry, as a topic declares it: the schema of its keys or values, read from the
    file beside the specs, and the compatibility level the registry checks new versions against."""

    name: str
    topic: str
    part: Literal["key", "value"]
    #: The schema as the file holds it, compacted (the registry compares schemas, not their layout).
    schema: str
    schema_type: SchemaType = "AVRO"
    compatibility: str = "BACKWARD"
    #: The schema file, as the spec names it (relative to the spec file's directory).
    file: str = ""
    location: Location = _loc()


@dataclass(frozen=True)
class RegistrySpec:
    """The schema registry the subjects go to: one kraftform runs beside the cluster (Apicurio Registry, built
    from Maven Central: `registry_app.py`), or, with `url`, one a team already runs."""

    port: int = 18081
    url: str | None = None
    #: The level of subjects that do not name one. Set on each subject explicitly: Apicurio's own default is NONE.
    compatibility: str = "BACKWARD"
    #: An external registry's HTTP basic authentication (a user and its secret), when it asks for one.
    username: str | None = None
    password: SecretRef | None = None
    heap_bytes: int = 256 * 1024 * 1024
    location: Location = _loc()

    @property
    def external(self) -> bool:
        return self.url is not None


@dataclass(frozen=True)
class SpecSet:
    """Everything one spec directory declares, with profiles resolved (built-ins included)."""

    cluster: ClusterSpec
    topics: tuple[TopicSpec, ...] = ()
    acls: tuple[AclSpec, ...] = ()
    quotas: tuple[QuotaSpec, ...] = ()
    users: tuple[UserSpec, ...] = ()
    principals: tuple[PrincipalSpec, ...] = ()
    consumers: tuple[ConsumerSpec, ...] = ()
    profiles: Mapping[str, Profile] = field(default_factory=dict)
    files: tuple[str, ...] = ()
    groups: tuple[GroupSpec, ...] = ()
    connect: tuple[ConnectSpec, ...] = ()
    registry: RegistrySpec | None = None
    subjects: tuple[SubjectSpec, ...] = ()

    def topic(self, name: str) -> TopicSpec | None:
        return next((t for t in self.topics if t.name == name), None)

    def acl_bindings(self) -> frozenset[AclBinding]:
        return frozenset(b for acl in self.acls for b in acl.bindings())
