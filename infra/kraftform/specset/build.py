"""Schema-valid spec documents -> the typed model, normalizing values on the way.

Runs only on documents that passed the JSON Schema, so shapes are known here; what can still be wrong is
a value's meaning (an unknown topic config key, a size that does not parse, a profile that extends an
unknown one). Such problems are collected, never raised one at a time.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from kraftform.definitions.group_configs import check_group_setting
from kraftform.definitions.server_configs import check_setting
from kraftform.definitions.topic_configs import normalize_topic_config
from kraftform.errors import Location, Problem
from kraftform.specset.checks import feature_problem
from kraftform.specset.hosts import unsafe_shared_dir
from kraftform.specset.model import (
    DEFAULT_CONNECT_HEAP,
    REALTIME,
    AclSpec,
    ClusterDefaults,
    ClusterSpec,
    ConnectorSpec,
    ConnectPlugin,
    ConnectSpec,
    ConsumerSpec,
    Conventions,
    DockerTls,
    EnvSecret,
    ExternalListener,
    GroupReader,
    GroupSpec,
    Host,
    Load,
    ManagedScope,
    Placement,
    PrincipalSpec,
    Profile,
    QuotaEntity,
    QuotaSpec,
    RegistrySpec,
    SecretRef,
    Security,
    Settings,
    SinkSpec,
    SparkSpec,
    SpecSet,
    SubjectSpec,
    TopicSpec,
    UserSpec,
    ValueFormat,
    Watermark,
)
from kraftform.specset.partial import SET_ASIDE
from kraftform.specset.profiles import BUILTIN_PROFILES, merge_profile
from kraftform.specset.schemas import parse_schema_file, subject_name
from kraftform.specset.yamlsource import JsonPath, SourceDoc
from kraftform.units import parse_duration_ms, parse_rate, parse_size
from kraftform.versions import KAFKA_VERSION


@dataclass(frozen=True)
class Entry:
    """One item of a section, with the document and path it came from."""

    doc: SourceDoc
    path: JsonPath
    data: Any

    def at(self, *more: str | int) -> Location:
        return self.doc.locate((*self.path, *more))


def entries(docs: list[SourceDoc], section: str) -> Iterator[Entry]:
    for doc in docs:
        if isinstance(doc.data, dict) and section in doc.data:
            value = doc.data[section]
            if isinstance(value, list):
                for index, item in enumerate(value):
                    if item is not SET_ASIDE:
                        yield Entry(doc, (section, index), item)
            else:
                yield Entry(doc, (section,), value)


def present(d: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    """The keys the spec sets: what it leaves out takes the model dataclass's default, defined there once."""
    return {k: d[k] for k in keys if k in d}


def plain_settings(raw: Mapping[str, Any] | None) -> dict[str, str]:
    """Client, broker and Spark settings in Kafka's string form (true/false, comma lists)."""

    def text(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, list):
            return ",".join(map(str, value))
        return str(value)

    return {key: text(value) for key, value in (raw or {}).items()}


class Builder:
    """Holds the problems found while building; each `_x` method builds one kind of object."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def _convert(self, parse: Callable[[Any], int], value: Any, where: Location) -> int | None:
        try:
            return parse(value)
        except ValueError as exc:
            self.problems.append(Problem(where, str(exc)))
            return None

    def _topic_config(self, entry: Entry, *path: str | int, owner: str = "") -> dict[str, str]:
        """Topic config keys normalized; `owner` ("topic 'x'") prefixes each problem with what it belongs to."""
        raw = entry.data
        for part in path:
            raw = raw.get(part) if isinstance(raw, dict) else None
        out = {}
        for key, value in (raw or {}).items():
            try:
                out[key] = normalize_topic_config(key, value)
            except ValueError as exc:
                self.problems.append(Problem(entry.at(*path, key), f"{owner}: {exc}" if owner else str(exc)))
        return out

    def cluster(self, entry: Entry) -> ClusterSpec:
        d = entry.data
        brokers = d["brokers"]
        defaults = ClusterDefaults.for_brokers(brokers, **present(
            d.get("defaults", {}), "partitions", "replication_factor", "min_insync_replicas"))
        sec = d.get("security", {})
        security = Security(
            **present(sec, "sasl_mechanism", "controller_auth", "admin_user"),
            external_listener=ExternalListener(**present(sec.get("external_listener", {}), "enabled", "host",
                                                         "base_port")),
        )
        scope = d.get("managed_scope", {})
        conv = d.get("conventions", {})
        bounds = {f"{edge}_retention_ms": self._convert(parse_duration_ms, conv[f"{edge}_retention"],
                                                        entry.at("conventions", f"{edge}_retention"))
                  for edge in ("min", "max") if f"{edge}_retention" in conv}
        if "topic_name" in conv:
            try:
                re.compile(conv["topic_name"])
            except re.error as exc:
                self.problems.append(Problem(entry.at("conventions", "topic_name"),
                                             f"not a regular expression: {exc}"))
        storage = d.get("storage_per_broker")
        resources = d.get("resources", {})
        heaps: dict[str, Any] = {f"{role}_heap_bytes": self._convert(parse_size, resources[f"{role}_heap"],
                                                     entry.at("resources", f"{role}_heap"))
                 for role in ("broker", "controller") if f"{role}_heap" in resources}
        return ClusterSpec(
            name=d["name"], brokers=brokers, kafka_version=d.get("kafka_version", KAFKA_VERSION),
            **present(d, "mode", "controllers", "metadata_version"), racks=tuple(d.get("racks", ())),
            storage_per_broker_bytes=None if storage is None else self._convert(
                parse_size, storage, entry.at("storage_per_broker")),
            placement=Placement(**present(d.get("placement", {}), "even_topics")),
            defaults=defaults, security=security, **{k: v for k, v in heaps.items() if v is not None},
            managed_scope=ManagedScope(tuple(scope.get("topic_prefixes", ())),
                                       **present(scope, "acl_principals", "acl_resources")),
            load=self._load(entry) if "load" in d else None,
            conventions=Conventions(conv.get("topic_name"), **bounds),
            spark=self._spark(entry),
            hosts=self._hosts(entry),
            **present(d, "host_failures_tolerated"),
            broker_config=self._settings(entry, "broker_config"),
            controller_config=self._settings(entry, "controller_config"),
            node_config={node: self._settings(entry, "node_config", node)
                         for node in (d.get("node_config") or {})},
            features=self._features(entry, d.get("kafka_version", KAFKA_VERSION)),
            location=entry.at(),
        )

    def _settings(self, entry: Entry, *at: str) -> dict[str, str]:
        """Each setting judged by the pinned Kafka's own definition of it (name, type, range)."""
        raw: Any = entry.data
        for part in at:
            raw = (raw or {}).get(part)
        settings = plain_settings(raw)
        for key, value in list(settings.items()):
            problem = check_setting(key, value)
            if problem is not None:  # reported here, and left out so later checks judge only valid settings
                self.problems.append(Problem(entry.at(*at, key), f"{'.'.join(at)}: {problem}"))
                del settings[key]
        return settings

    def _features(self, entry: Entry, kafka_version: str) -> dict[str, int]:
        features = {str(k): int(v) for k, v in (entry.data.get("features") or {}).items()}
        for name, level in list(features.items()):
            problem = feature_problem(name, level, kafka_version)
            if problem is not None:  # reported here, and left out of the model the later checks read
                self.problems.append(Problem(entry.at("features", name), f"features: {problem}"))
                del features[name]
        return features

    def _hosts(self, entry: Entry) -> tuple[Host, ...]:
        """Each host as written; a `tls` file path is taken from the spec file's directory, so the same specs
        work from any working directory."""
        # Absolute, whatever directory the specs were named from: the records keep them, and commands given only
        # the state directory run from anywhere.
        here = Path(entry.doc.file).parent.resolve()
        hosts = []
        listener = entry.data.get("security", {}).get("external_listener", {})
        if entry.data.get("hosts") and "host" in listener:
            self.problems.append(Problem(entry.at("security", "external_listener", "host"),
                                         "with hosts, each broker is reached at its host's address; remove "
                                         "external_listener.host"))
        if entry.data.get("hosts") and listener.get("enabled") is False:
            self.problems.append(Problem(entry.at("security", "external_listener", "enabled"),
                                         "with hosts, every broker's client listener is at its host's address from "
                                         "base_port (clients and the other hosts reach it there): it cannot be "
                                         "disabled; remove external_listener.enabled"))
        for i, h in enumerate(entry.data.get("hosts") or ()):
            tls = h.get("tls")
            hosts.append(Host(h["name"], h["docker"], h["address"], tuple(h.get("racks", ())),
                              tuple(h.get("nodes", ())),
                              DockerTls(*(str(here / tls[k]) for k in ("ca", "cert", "key"))) if tls else None,
                              entry.at("hosts", i)))
        return tuple(hosts)

    def _spark(self, entry: Entry) -> SparkSpec:
        d = entry.data.get("spark", {})
        memory = self._convert(parse_size, d["worker_memory"], entry.at("spark", "worker_memory")) \
            if "worker_memory" in d else None
        given: dict[str, Any] = {**present(d, "master", "workers", "worker_cores", "shared_dir"),
                                 **({"worker_memory_bytes": memory} if memory is not None else {}),
                                 "hosts": tuple(d.get("hosts", ()))}
        hosts = [h["name"] for h in entry.data.get("hosts") or ()]
        for i, name in enumerate(d.get("hosts", ())):
            if hosts and name not in hosts:
                self.problems.append(Problem(entry.at("spark", "hosts", i),
                                             f"no host {name!r} in cluster.hosts ({', '.join(hosts)})"))
        if not hosts:
            self.problems.extend(Problem(entry.at("spark", key), f"spark.{key} places Spark on cluster.hosts, and this "
                                                                 f"cluster has none") for key in ("hosts", "shared_dir")
                                 if key in d)
        elif d.get("master", "local") == "standalone":
            if "workers" in d:
                self.problems.append(Problem(entry.at("spark", "workers"), "on cluster.hosts, a worker runs on each of "
                                             "spark.hosts (every host when unset); remove spark.workers"))
            if "shared_dir" in d and (refused := unsafe_shared_dir(d["shared_dir"])):
                self.problems.append(Problem(entry.at("spark", "shared_dir"), refused))
            if "shared_dir" not in d:
                self.problems.append(Problem(entry.at("spark"), "a standalone Spark on cluster.hosts needs "
                                             "spark.shared_dir: a directory every Spark host mounts at that path from "
                                             "one shared file system (NFS, ...), where executors on one host write "
                                             "checkpoint state and Parquet files the driver on another reads"))
            given["workers"] = len(d.get("hosts") or hosts)
        return SparkSpec(**given)

    def _load(self, entry: Entry) -> Load | None:
        d = entry.data["load"]

        def opt(parse: Callable[[Any], int], key: str) -> int | None:
            return None if key not in d else self._convert(parse, d[key], entry.at("load", key))

        size = self._convert(parse_size, d["average_message_size"], entry.at("load", "average_message_size"))
        retention = self._convert(parse_duration_ms, d["retention"], entry.at("load", "retention"))
        if size is None or retention is None:
            return None
        return Load(
            messages_per_day=d["messages_per_day"], average_message_bytes=size, retention_ms=retention,
            replication_factor=d.get("replication_factor"),
            peak_write_bytes_per_s=opt(parse_rate, "peak_write_rate"),
            **present(d, "consumer_groups", "controller_failures_tolerated"),
            broker_network_bytes_per_s=opt(parse_rate, "broker_network"),
            broker_write_capacity_bytes_per_s=opt(parse_rate, "broker_write_capacity"),
            partition_throughput_bytes_per_s=opt(parse_rate, "partition_throughput"),
        )

    def profiles(self, found: list[Entry]) -> dict[str, Profile]:
        """Built-ins, then spec profiles layered on what they extend (a built-in of the same name, or
        `extends`, or balanced); unknown bases and cycles are problems."""
        resolved: dict[str, Profile] = dict(BUILTIN_PROFILES)
        pending: dict[str, Entry] = {}
        for entry in found:
            name = entry.data["name"]
            if name in pending:
                self.problems.append(Problem(entry.at("name"),
                                             f"duplicate profile {name!r} (also at {pending[name].at()})"))
            else:
                pending[name] = entry
        resolving: set[str] = set()
        failed: set[str] = set()

        def resolve(name: str) -> Profile | None:
            if name not in pending:
                return resolved.get(name)
            entry = pending[name]
            base_name = entry.data.get("extends") or (name if name in BUILTIN_PROFILES else "balanced")
            if name in resolving:
                self.problems.append(Problem(entry.at("extends"),
                                             f"profile {name!r} is part of an `extends` cycle"))
                failed.add(name)
                return None
            resolving.add(name)
            base = BUILTIN_PROFILES[name] if base_name == name else resolve(base_name)
            resolving.discard(name)
            del pending[name]
            if base is None:
                if base_name not in failed:
                    self.problems.append(Problem(entry.at("extends"),
                                                 f"profile {name!r} extends unknown profile {base_name!r}"))
                failed.add(name)
                return None
            own = Profile(
                name=name, description=entry.data.get("description", ""),
                replication_factor=entry.data.get("replication_factor"),
                topic=self._topic_config(entry, "topic"),
                producer=plain_settings(entry.data.get("producer")),
                consumer=plain_settings(entry.data.get("consumer")),
                broker=plain_settings(entry.data.get("broker")),
                spark=plain_settings(entry.data.get("spark")), location=entry.at(),
            )
            resolved[name] = merge_profile(base, own)
            return resolved[name]

        for name in list(pending):
            if name in pending:
                resolve(name)
        return resolved

    def topic(self, entry: Entry, cluster: ClusterSpec, profiles: Mapping[str, Profile]) -> TopicSpec:
        d = entry.data
        profile = profiles.get(d.get("profile", "balanced"))
        base: Settings = profile.topic if profile else {}
        rf = d.get("replication_factor") or (profile.replication_factor if profile else None)
        rate = d.get("expected_write_rate")
        return TopicSpec(
            name=d["name"], partitions=d["partitions"],
            replication_factor=rf or cluster.defaults.replication_factor,
            config={**base, **self._topic_config(entry, "config", owner=f"topic {d['name']!r}")},
            profile=d.get("profile"), description=d.get("description", ""), owner=d.get("owner"),
            expected_write_bytes_per_s=None if rate is None else self._convert(
                parse_rate, rate, entry.at("expected_write_rate")),
            location=entry.at(),
        )

    def consumer(self, entry: Entry, subjects: tuple[SubjectSpec, ...]) -> ConsumerSpec:
        d = entry.data
        sink = d["sink"]
        trigger = d.get("trigger")
        value = d.get("value") or {}
        watermark = d.get("watermark")
        delay = None if watermark is None else self._convert(parse_duration_ms, watermark["delay"],
                                                             entry.at("watermark", "delay"))
        return ConsumerSpec(
            name=d["name"], topics=tuple(d["topics"]), user=d["user"],
            sink=SinkSpec(sink["type"], sink.get("path"), sink.get("topic")),
            group_id_prefix=d.get("group_id_prefix", d["name"]), **present(d, "profile", "starting_offsets", "cores"),
            trigger=trigger if trigger in (None, REALTIME) else self._convert(
                parse_duration_ms, trigger, entry.at("trigger")),
            max_offsets_per_trigger=d.get("max_offsets_per_trigger"),
            value=self._value_format(entry, value, subjects),
            watermark=None if watermark is None or delay is None else Watermark(watermark["column"], delay),
            query=d.get("query"), transform=d.get("transform"), checkpoint=d.get("checkpoint"),
            options=plain_settings(d.get("options")), description=d.get("description", ""), location=entry.at(),
            query_location=entry.at("query") if "query" in d else entry.at(),
        )

    def _value_format(self, entry: Entry, value: dict[str, Any], subjects: tuple[SubjectSpec, ...]) -> ValueFormat:
        """An Avro consumer reads with the value schema its topics declare: one schema, so the job has one set of
        columns (and a change to it reaches the consumer's settings, its diff and its gate)."""
        if value.get("format") != "avro":
            return ValueFormat(value.get("format", "string"), value.get("schema"))
        named = f"consumer {entry.data['name']!r}"
        if "schema" in value:
            self.problems.append(Problem(entry.at("value", "schema"), f"{named}: an avro consumer reads with its "
                                         f"topics' declared value schema (`schemas.value`); remove value.schema"))
        declared = {s.topic: s for s in subjects if s.part == "value"}
        schemas: dict[str, list[str]] = {}
        for topic in entry.data["topics"]:
            subject = declared.get(topic)
            if subject is None or subject.schema_type != "AVRO":
                self.problems.append(Problem(entry.at("value", "format"), f"{named} reads avro values, and topic "
                                             f"{topic!r} declares no Avro value schema (its `schemas: {{value: "
                                             f"FILE.avsc}}`)"))
                continue
            schemas.setdefault(subject.schema, []).append(f"{topic} ({subject.file})")
        if len(schemas) > 1:
            self.problems.append(Problem(entry.at("value", "format"), f"{named} reads avro values of topics with "
                                         f"different value schemas: {'; '.join(', '.join(t) for t in schemas.values())}"
                                         f" (one consumer, one schema: split it, or declare one schema file)"))
        return ValueFormat("avro", next(iter(schemas), None))

    def group(self, entry: Entry) -> GroupSpec:
        config = plain_settings(entry.data.get("config"))
        for key, value in list(config.items()):
            problem = check_group_setting(key, value)
            if problem is not None:
                self.problems.append(Problem(entry.at("config", key), f"group {entry.data['name']!r}: {problem}"))
                del config[key]
        readers = tuple(GroupReader(r["principal"], tuple(r["topics"]), entry.at("readers", i))
                        for i, r in enumerate(entry.data.get("readers", ())))
        return GroupSpec(entry.data["name"], config, entry.data.get("description", ""), entry.at(),
                         entry.data.get("type"), readers)

    def connect(self, entry: Entry, cluster: ClusterSpec, mechanisms: Mapping[str, str]) -> ConnectSpec:
        """`mechanisms`: each declared user's SASL mechanism, which a connector's own user logs in with."""
        d = entry.data
        topics = d.get("internal_topics", {})
        heap = None if "heap" not in d else self._convert(parse_size, d["heap"], entry.at("heap"))
        plugins = tuple(ConnectPlugin(p["name"], p["maven"], p["sha256"], tuple(p.get("exclude", ())),
                                      entry.at("plugins", i))
                        for i, p in enumerate(d.get("plugins", ())) if p is not SET_ASIDE)
        connectors = tuple(self._connector(entry, i, c, mechanisms) for i, c in enumerate(d.get("connectors", ()))
                           if c is not SET_ASIDE)
        return ConnectSpec(
            name=d["name"], user=d["user"], mechanism=mechanisms.get(d["user"], ConnectSpec.mechanism),
            **present(d, "workers", "rest_port", "description"),
            heap_bytes=DEFAULT_CONNECT_HEAP if heap is None else heap, plugins=plugins,
            topic_prefix=topics.get("prefix", f"{d['name']}."),
            replication_factor=topics.get("replication_factor", cluster.defaults.replication_factor),
            **present(topics, "offsets_partitions", "status_partitions"),
            config=plain_settings(d.get("config")), connectors=connectors, location=entry.at())

    @staticmethod
    def _connector(entry: Entry, index: int, d: Mapping[str, Any], mechanisms: Mapping[str, str]) -> ConnectorSpec:
        config: dict[str, str | EnvSecret] = {}
        for key, value in (d.get("config") or {}).items():
            config[key] = EnvSecret(value["env"]) if isinstance(value, dict) else plain_settings({key: value})[key]
        return ConnectorSpec(
            name=d["name"], connector_class=d["class"], type=d["type"], topics=tuple(d["topics"]),
            **present(d, "tasks_max", "state", "description", "user"), config=config,
            mechanism=mechanisms.get(d.get("user", ""), ConnectorSpec.mechanism),
            location=entry.at("connectors", index))

    def quota(self, entry: Entry) -> QuotaSpec:
        d = entry.data
        values: dict[str, float] = {}
        for key in ("producer_byte_rate", "consumer_byte_rate"):
            if key in d:
                rate = self._convert(parse_rate, d[key], entry.at(key))
                if rate is not None:
                    values[key] = float(rate)
        for key in ("request_percentage", "controller_mutation_rate"):
            if key in d:
                values[key] = float(d[key])
        entity = QuotaEntity(d["entity"].get("user"), d["entity"].get("client_id"))
        return QuotaSpec(entity, values, entry.at())


def _registry(b: Builder, docs: list[SourceDoc]) -> RegistrySpec | None:
    found = list(entries(docs, "registry"))
    for extra in found[1:]:
        b.problems.append(Problem(extra.at(), f"a second `registry` section (the first is at {found[0].at()})"))
    if not found:
        return None
    entry, d = found[0], found[0].data
    heap = None if "heap" not in d else b._convert(parse_size, d["heap"], entry.at("heap"))
    return RegistrySpec(d.get("port", RegistrySpec.port), d.get("url"),
                        d.get("compatibility", RegistrySpec.compatibility), d.get("username"),
                        _secret(d["password"]) if "password" in d else None,
                        RegistrySpec.heap_bytes if heap is None else heap, entry.at())


def _subjects(b: Builder, entry: Entry, registry: RegistrySpec | None) -> list[SubjectSpec]:
    """The subjects a topic entry's `schemas` declare, each schema file read and checked (`specset.schemas`)."""
    declared = entry.data.get("schemas")
    if not declared:
        return []
    if registry is None:
        b.problems.append(Problem(entry.at("schemas"), "schemas are declared but no `registry` section says where "
                                                       "they go (`registry: {}` runs one beside the cluster)"))
        return []
    naming = declared.get("naming", "topic")
    out: list[SubjectSpec] = []
    for part in ("key", "value"):
        if part not in declared:
            continue
        given = declared[part]
        d = {"file": given} if isinstance(given, str) else given
        where = entry.at("schemas", part) if isinstance(given, str) else entry.at("schemas", part, "file")
        relative = Path(d["file"])
        if relative.is_absolute() or ".." in relative.parts:
            b.problems.append(Problem(where, f"schema file {d['file']!r} must lie below the spec file's directory "
                                             f"(what is reviewed and versioned with the specs)"))
            continue
        path = Path(entry.doc.file).parent / relative
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            b.problems.append(Problem(where, f"cannot read schema file {d['file']!r}: {exc}"))
            continue
        kind = cast(Any, d.get("type", "avro").upper())
        parsed, problems = parse_schema_file(text, str(path), kind)
        b.problems.extend(problems)
        if parsed is None:
            continue
        name = subject_name(entry.data["name"], cast(Any, part), naming, parsed.record_name)
        if name is None:
            b.problems.append(Problem(entry.at("schemas", "naming"), f"naming {naming!r} names a subject after its "
                                      f"record, and {d['file']!r} is not an Avro record"))
            continue
        out.append(SubjectSpec(name, entry.data["name"], cast(Any, part), parsed.text, kind,
                               d.get("compatibility", registry.compatibility), d["file"], where))
    return out


def build_specset(docs: list[SourceDoc]) -> tuple[SpecSet | None, list[Problem]]:
    """The model of schema-valid documents, or the problems that prevent building it."""
    b = Builder()
    clusters = list(entries(docs, "cluster"))
    if not clusters:
        first = docs[0].file if docs else "<specs>"
        return None, [Problem(Location(first), "no file declares the `cluster` section; exactly one must")]
    for extra in clusters[1:]:
        b.problems.append(Problem(extra.at(), f"a second `cluster` section (the first is at {clusters[0].at()})"))
    cluster = b.cluster(clusters[0])
    profiles = b.profiles(list(entries(docs, "profiles")))
    groups = tuple(b.group(e) for e in entries(docs, "groups"))
    declared_acls = tuple(
        AclSpec(principal=e.data["principal"], resource_type=e.data["resource"]["type"],
                resource_name=e.data["resource"]["name"], operations=tuple(e.data["operations"]),
                **present(e.data, "permission", "host"),
                **{"pattern_type": e.data["resource"]["pattern"]} if "pattern" in e.data["resource"] else {},
                location=e.at())
        for e in entries(docs, "acls"))
    users = tuple(UserSpec(e.data["name"], _secret(e.data["password"]),
                           **present(e.data, "mechanism", "iterations", "password_version", "description"),
                           location=e.at())
                  for e in entries(docs, "users"))
    mechanisms = {u.name: u.mechanism for u in users}
    connect = tuple(b.connect(e, cluster, mechanisms) for e in entries(docs, "connect"))
    registry = _registry(b, docs)
    subjects = tuple(s for e in entries(docs, "topics") for s in _subjects(b, e, registry))
    specset = SpecSet(
        cluster=cluster,
        topics=tuple(b.topic(e, cluster, profiles) for e in entries(docs, "topics")) +
        tuple(t for c in connect for t in c.derived_topics()),
        acls=declared_acls + _derived_acls([*(a for g in groups for a in g.reader_acls()),
                                            *(a for c in connect for a in c.derived_acls())], declared_acls),
        quotas=tuple(b.quota(e) for e in entries(docs, "quotas")),
        users=users,
        principals=tuple(PrincipalSpec(e.data["name"], e.data.get("description", ""), e.at())
                         for e in entries(docs, "principals")),
        consumers=tuple(b.consumer(e, subjects) for e in entries(docs, "consumers")),
        profiles=profiles,
        files=tuple(d.file for d in docs),
        groups=groups,
        connect=connect,
        registry=registry,
        subjects=subjects,
    )
    return specset, b.problems


def _derived_acls(derived: list[AclSpec], declared: tuple[AclSpec, ...]) -> tuple[AclSpec, ...]:
    """Grants the specs imply (a group's readers', a Connect cluster's workers'), less those the acls section
    already declares: a grant is one ACL binding in Kafka however many entries ask for it."""
    have = {b for acl in declared for b in acl.bindings()}
    added: list[AclSpec] = []
    for acl in derived:
        operations = tuple(b.operation for b in acl.bindings() if b not in have)
        if operations:
            added.append(dataclasses.replace(acl, operations=operations))
            have |= set(acl.bindings())
    return tuple(added)


def _secret(raw: Mapping[str, str]) -> SecretRef:
    (source, name), = raw.items()
    return SecretRef(cast(Any, source), name)
