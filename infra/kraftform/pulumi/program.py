"""The stack: the specs, the cluster (made here, or an existing one), its topics, and the outputs.

`infra/__main__.py` reads the stack configuration into a `StackConfig` and calls `build`; tests call
`build` under `pulumi.runtime.set_mocks`, so the resource graph is checked without the Pulumi CLI.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Literal, cast

import pulumi
import pulumi_docker as docker

from kraftform.cluster.connect import REST_USER
from kraftform.cluster.connection import SASL_SSL, Connection
from kraftform.cluster.containers import LABEL_CLUSTER, in_containers, network_bootstrap, stack_image
from kraftform.cluster.topology import topology
from kraftform.declared import load_specs
from kraftform.definitions.server_configs import definition
from kraftform.errors import KraftformError, SpecError
from kraftform.kafka.credentials import missing_password, passwords, read_secret
from kraftform.plan.brokers import declared_features
from kraftform.plan.live import declared_principals
from kraftform.pulumi.cluster import KafkaCluster
from kraftform.pulumi.connect import ConnectCluster, connect_props
from kraftform.pulumi.consumers import SparkCluster, SparkConsumer, SparkConsumerArgs, SparkSecret
from kraftform.pulumi.monitoring import Monitoring
from kraftform.pulumi.policy import SPECS_TYPE
from kraftform.pulumi.providers import Access, BrokerSettings, Features, GroupSettings, access_props
from kraftform.pulumi.registry import SchemaRegistry, Subjects, registry_props, registry_url, subjects_props
from kraftform.pulumi.topics import Topics
from kraftform.runtime.engines.images import spark_image
from kraftform.spark.containers import consumers_volume
from kraftform.spark.manifest import consumer_manifest
from kraftform.specset.model import DEFAULT_ENTITY, RegistrySpec, SpecSet, UserSpec


@dataclass(frozen=True)
class StackConfig:
    specs_dir: Path
    mode: Literal["docker", "external"] = "docker"
    env: str = "dev"
    image: str = "official"
    admin_password: pulumi.Input[str] | None = field(default=None, repr=False)
    #: external mode: an existing cluster kraftform did not create.
    bootstrap: str | None = None
    username: str | None = None
    password: pulumi.Input[str] | None = field(default=None, repr=False)
    ca_path: str | None = None
    #: Protection of topics and principals: removing one from the specs then fails instead of deleting its
    #: data or credential. Default: on in prod, off in dev (throw-away clusters).
    protect: bool | None = None
    #: Consumers allowed to start from a new checkpoint when their definition changed its state's shape
    #: (otherwise refused in preview): names, or "*" for every one. Taking it back redeploys nothing.
    allow_state_reset: frozenset[str] = frozenset()
    #: Run the consumers in containers on the stack's Docker engine. Default: in docker mode yes; in external
    #: mode no (the machine running `pulumi up` may not be where they belong).
    deploy_consumers: bool | None = None
    #: The consumers' image: by default the locally built `kraftform/spark:<version>-<code digest>`; any image
    #: honouring its contract (docs/spark.md) by name.
    spark_image: str | None = None
    #: Prometheus and kraftform's exporter beside the cluster (docker mode), Prometheus on 127.0.0.1:PORT.
    monitoring: bool = False
    monitoring_port: int = 9090

    @property
    def deploys_consumers(self) -> bool:
        return self.mode == "docker" if self.deploy_consumers is None else self.deploy_consumers

    @property
    def protects(self) -> bool:
        return self.env == "prod" if self.protect is None else self.protect

    @classmethod
    def from_pulumi(cls, project_dir: Path) -> StackConfig:
        """The stack's `kraftform:*` settings; relative paths are taken from the project (where Pulumi.yaml is),
        whatever directory Pulumi runs the program in."""
        c = pulumi.Config("kraftform")
        mode = c.get("mode") or "docker"
        if mode not in ("docker", "external"):
            raise pulumi.RunError(f"kraftform:mode must be docker or external, got {mode!r}")
        env = c.get("env") or "dev"
        if env not in ("dev", "prod"):
            raise pulumi.RunError(f"kraftform:env must be dev or prod, got {env!r}")
        ca_path = c.get("caPath")
        return cls(project_dir / (c.get("specsDir") or "specs"), mode, env,  # type: ignore[arg-type]
                   c.get("image") or "official", c.get_secret("adminPassword"), c.get("bootstrapServers"),
                   c.get("username"), c.get_secret("password"), str(project_dir / ca_path) if ca_path else None,
                   c.get_bool("protect"), reset_names(c.get("allowStateReset")), c.get_bool("deployConsumers"),
                   c.get("sparkImage"), bool(c.get_bool("monitoring")), c.get_int("monitoringPort") or 9090)

    def allows_reset(self, consumer: str) -> bool:
        return "*" in self.allow_state_reset or consumer in self.allow_state_reset


def reset_names(value: str | None) -> frozenset[str]:
    """`kraftform:allowStateReset`: consumer names, comma-separated or a YAML/JSON list; `true` for all."""
    text = (value or "").strip()
    if text.lower() in ("", "false"):
        return frozenset()
    if text.lower() == "true":
        return frozenset({"*"})
    if text.startswith("["):
        try:
            names = json.loads(text)
        except ValueError:
            raise pulumi.RunError(f"kraftform:allowStateReset: {text!r} is not a list of consumer names") from None
        return frozenset(str(n) for n in names)
    return frozenset(n.strip() for n in text.split(",") if n.strip())


def load(specs_dir: Path) -> SpecSet:
    """The specs, or a RunError with the same located messages as `kraftform validate`."""
    try:
        return load_specs(specs_dir)
    except SpecError as exc:
        raise pulumi.RunError("invalid specs:\n" + "\n".join(str(p) for p in exc.problems)) from None
    except KraftformError as exc:
        raise pulumi.RunError(str(exc)) from None


def user_passwords(users: Sequence[UserSpec]) -> dict[str, pulumi.Output[str]]:
    """Each user's password as a Pulumi secret: from `pulumi config set --secret`, the environment or a file;
    every one that is missing named at once (where it should be, never a value), so one run says all to set."""
    config = pulumi.Config("kraftform")
    found: dict[str, pulumi.Output[str]] = {}
    missing: list[UserSpec] = []
    for user in users:
        if user.password.source == "pulumi_config":
            value = config.get_secret(user.password.name)
        else:
            plain = passwords((user,))[user.name]
            value = None if plain is None else pulumi.Output.secret(plain)
        if value is None:
            missing.append(user)
        else:
            found[user.name] = value
    if missing:
        raise pulumi.RunError(f"{len(missing)} password(s) not set; nothing was deployed:\n" + "\n".join(
            f"  {u.location}: {missing_password(u)}" + (f" (pulumi config set --secret kraftform:{u.password.name} "
                                                        f"...)" if u.password.source == "pulumi_config" else "")
            for u in missing))
    return found


def admin_connection(props: dict[str, Any]) -> dict[str, str]:
    """The stack's admin login as an output (secret): what `kraftform stack client-files` turns into the
    admin.properties, admin.librdkafka.conf and ca.pem that `kraftform plan`, kcat and Kafka's tools read."""
    c = Connection.from_props(props)
    return {"bootstrapServers": c.bootstrap, "securityProtocol": c.protocol, "saslMechanism": c.mechanism or "",
            "username": c.username or "", "password": c.password or ""}


@dataclass(frozen=True)
class Stack:
    outputs: dict[str, Any]
    #: The Kafka resources (topics, access, subjects), for tests that wait until all are registered.
    kafka_resources: list[pulumi.Resource]


def consumers(cfg: StackConfig, specs: SpecSet, cluster: KafkaCluster | None, ca_pem: pulumi.Input[str],
              kafka: Mapping[str, pulumi.Resource], secrets: Mapping[str, pulumi.Output[str]],
              subjects: Subjects | None = None) -> tuple[dict[str, SparkConsumer], docker.Volume | None]:
    """Each consumer in a container on the stack's Docker engine, once its topics and its principal's access
    exist: beside the stack's cluster on its network (docker mode), or on a network of its own reaching an
    existing cluster at `kraftform:bootstrapServers` (external mode, when `kraftform:deployConsumers` asks).
    An Avro consumer waits for the subjects, whose registered versions its job decodes with.
    Returns them and their volume (where their checkpoints are)."""
    parent = pulumi.ComponentResource("kraftform:index:Consumers", "consumers",
                                      {"declared": [c.name for c in specs.consumers]})
    if not cfg.deploys_consumers or not specs.consumers:
        return {}, None
    options = pulumi.ResourceOptions(parent=parent)
    image = docker.RemoteImage("spark-image", name=cfg.spark_image or spark_image(), keep_locally=True, opts=options)
    spec = in_containers(specs.cluster)
    volume = docker.Volume("consumers-data", name=consumers_volume(spec.name), opts=pulumi.ResourceOptions(
        parent=parent, protect=cfg.protects))  # the checkpoints: what the sinks' exactly-once rests on
    if cluster is None and not cfg.ca_path:
        raise pulumi.RunError("kraftform:deployConsumers in external mode needs kraftform:caPath: the consumers' "
                              "containers trust the cluster's CA")
    if cluster is not None:
        network: pulumi.Input[str] = cluster.network.name
        bootstrap = network_bootstrap(n.name for n in topology(spec).brokers)
    else:
        network = docker.Network("consumers-network", name=f"kraftform-{spec.name}-consumers",
                                 labels=[docker.NetworkLabelArgs(label=LABEL_CLUSTER, value=spec.name)],
                                 opts=options).name
        bootstrap = cfg.bootstrap or ""
    unknown = sorted(cfg.allow_state_reset - {"*"} - {c.name for c in specs.consumers})
    if unknown:
        raise pulumi.RunError(f"kraftform:allowStateReset names no declared consumer: {', '.join(unknown)} "
                              f"(declared: {', '.join(c.name for c in specs.consumers)})")
    spark: list[pulumi.Resource] = []
    secret: pulumi.Output[str] | None = None
    if spec.spark.master == "standalone":
        secret = SparkSecret("spark-secret", spec.name, options).secret
        spark = list(SparkCluster("spark", spec.name, spec.spark, network, ca_pem, secret, image, volume,
                                  options).containers)
    made = {}
    for c in specs.consumers:
        # Only what this consumer uses: the topics resource (its topics exist), its principal's access, and the
        # Spark cluster it is submitted to.
        after = [kafka["topics"], *([kafka[f"User:{c.user}"]] if f"User:{c.user}" in kafka else []), *spark]
        writers = None
        if c.value.format == "avro" and subjects is not None:
            writers = subjects.writers.apply(partial(_topics_writers, c.topics))
        made[c.name] = SparkConsumer(c.name, SparkConsumerArgs(
            consumer_manifest(c, specs), spec.name, bootstrap, secrets[c.user], ca_pem, network, image, volume, after,
            cfg.allows_reset(c.name), writers, secret), options)
    return made, volume


def _topics_writers(topics: Sequence[str], writers: Mapping[str, Mapping[str, str]] | None) -> dict[str, str]:
    """The writer schemas by id of `topics`, from the `Subjects` output (each Avro value topic's versions)."""
    return {i: schema for topic in topics for i, schema in (writers or {}).get(topic, {}).items()}


def _named(names: Sequence[str], values: Mapping[str, pulumi.Output[str]]) -> pulumi.Output[dict[str, str]]:
    """The outputs of `names` as one output of a mapping."""
    return pulumi.Output.all(*(values[n] for n in names)).apply(lambda v: dict(zip(names, v, strict=True)))


def _cluster_ca(cluster: KafkaCluster) -> pulumi.Output[dict[str, str]]:
    """The stack cluster's CA (`cert` and `key`), for what issues certificates beside it (Connect workers, the
    schema registry)."""
    return pulumi.Output.all(cluster.secrets.ca_cert, cluster.secrets.ca_key).apply(  # type: ignore[attr-defined]
        lambda v: {"cert": v[0], "key": v[1]})


def connect_clusters(cfg: StackConfig, specs: SpecSet, cluster: KafkaCluster | None,
                     kafka: Mapping[str, pulumi.Resource], secrets: Mapping[str, pulumi.Output[str]]
                     ) -> dict[str, ConnectCluster]:
    """Each declared Kafka Connect cluster, its workers in containers beside the stack's cluster, once its internal
    topics and the grants of its workers' and connectors' users exist. An existing cluster's stack refuses them,
    at their place: the machine running `pulumi up` is not where its workers belong, and a declared connector left
    out would be a change silently ignored."""
    if not specs.connect:
        return {}
    if cluster is None:
        raise pulumi.RunError("external mode does not run Kafka Connect workers; nothing was deployed:\n" + "\n".join(
            f"  {c.location}: Connect cluster {c.name!r}: run it with `kraftform connect up` and `kraftform connect "
            f"apply`, or leave it out of the stack's specs" for c in specs.connect))
    unset = [(c, name) for c in specs.connect for name in c.environment_names if not os.environ.get(name)]
    if unset:
        raise pulumi.RunError(f"{len(unset)} connector secret(s) not set in the environment of `pulumi up`; nothing "
                              f"was deployed:\n" + "\n".join(f"  {c.location}: Connect cluster {c.name!r}: {name}"
                                                               for c, name in unset))
    spec = in_containers(specs.cluster)
    ca = _cluster_ca(cluster)
    made = {}
    for c in specs.connect:
        users = (c.user, *c.connector_users)
        after = [kafka["topics"], *(kafka[f"User:{u}"] for u in users if f"User:{u}" in kafka)]
        made[c.name] = ConnectCluster(f"connect-{c.name}", connect_props(
            c, spec.name, cluster.network.name, stack_image(cfg.image, spec.kafka_version),
            network_bootstrap(n.name for n in topology(spec).brokers), ca, secrets[c.user],
            _named(c.connector_users, secrets),
            {name: os.environ[name] for name in c.environment_names}, cluster.connection, cfg.protects),
            pulumi.ResourceOptions(depends_on=[*cluster.ready, *after], protect=cfg.protects))
    return made


def _registry_password(spec: RegistrySpec) -> pulumi.Output[str] | None:
    """An external registry's password, as a Pulumi secret; a declared one that is not set fails at its place."""
    ref = spec.password
    if ref is None:
        return None
    if ref.source == "pulumi_config":
        value = pulumi.Config("kraftform").get_secret(ref.name)
    else:
        plain = read_secret(ref)
        value = None if plain is None else pulumi.Output.secret(plain)
    if value is None:
        raise pulumi.RunError(f"{spec.location}: the registry's password is not set ({ref}); nothing was deployed")
    return value


def schema_registry(cfg: StackConfig, specs: SpecSet, cluster: KafkaCluster | None,
                    kafka: Mapping[str, pulumi.Resource]) -> tuple[Subjects | None, dict[str, Any]]:
    """The registry the specs' `registry` section declares (a container beside the stack's cluster, or an external
    one by its URL) and the declared subjects on it, after the topics; returns the subjects and the registry's
    output. An existing cluster's stack runs no registry: it needs `registry.url`."""
    spec = specs.registry
    if spec is None:
        return None, {}
    login: pulumi.Input[dict[str, Any]]
    if spec.url is not None:
        url = spec.url.rstrip("/")
        password = _registry_password(spec)
        login = {"url": url, "username": spec.username or "", "password": password or ""}
    elif cluster is None:
        raise pulumi.RunError(f"{spec.location}: external mode runs no schema registry beside the cluster; nothing was "
                              f"deployed. Give `registry.url` (the registry your team runs), or leave the section out")
    else:
        url = registry_url(spec)
        name = in_containers(specs.cluster).name
        registry = SchemaRegistry("schema-registry", registry_props(
            spec, name, cluster.network.name, stack_image(cfg.image, specs.cluster.kafka_version),
            _cluster_ca(cluster)),
            pulumi.ResourceOptions(depends_on=cluster.ready, protect=cfg.protects))
        login = registry.client
    subjects = Subjects("subjects", subjects_props(specs.subjects, specs.consumers, [t.name for t in specs.topics],
                                                   login, cfg.protects),
                        pulumi.ResourceOptions(depends_on=[kafka["topics"]], protect=cfg.protects))
    return subjects, {"url": url, "subjects": sorted(s.name for s in specs.subjects)}


def build(cfg: StackConfig) -> Stack:
    """Declare every resource; returns the stack outputs (also exported) and the Kafka resources."""
    specs = load(cfg.specs_dir)
    secrets = user_passwords(specs.users)
    # Carries what the policy pack needs: the spec directory and the environment it is checked for.
    pulumi.ComponentResource(SPECS_TYPE, "specs", {"specsDir": str(cfg.specs_dir.resolve()), "env": cfg.env})
    security = specs.cluster.security
    depends: list[pulumi.Resource] = []
    cluster: KafkaCluster | None = None
    if cfg.mode == "docker" and specs.cluster.hosts:
        beside = [what for what, there in (
            ("Connect clusters", bool(specs.connect)),
            ("the schema registry", specs.registry is not None and not specs.registry.external),
            ("consumers in containers", cfg.deploys_consumers and bool(specs.consumers)),
            ("kraftform:monitoring", cfg.monitoring)) if there]
        over_ssh = [h for h in specs.cluster.hosts if h.docker.startswith("ssh://")]
        if over_ssh:
            # The node work runs in the dynamic providers' process, where docker-py's ssh connections close without an
            # answer (found with a real engine and in the provider host); the CLI's reach the same engines.
            raise pulumi.RunError(f"{over_ssh[0].location}: host {over_ssh[0].name!r}: an ssh:// Docker endpoint is "
                                  f"not supported under `pulumi up` yet; give the host a tcp:// endpoint with TLS "
                                  f"client certificates, or run the cluster with `kraftform cluster up --runtime "
                                  f"docker`; nothing was deployed (docs/hosts.md)")
        if beside:
            raise pulumi.RunError(f"{specs.cluster.hosts[0].location}: cluster.hosts: the stack places the nodes on "
                                  f"their hosts, but not yet what runs beside them: {', '.join(beside)}; nothing was "
                                  f"deployed (`kraftform connect up`, `consumers up` and `monitoring up` run Connect "
                                  f"workers, consumers and monitoring beside a cluster on hosts: docs/hosts.md)")
    if cfg.mode == "docker":
        cluster = KafkaCluster(specs.cluster.name, specs.cluster, stack_image(cfg.image, specs.cluster.kafka_version),
                               cfg.admin_password, protect=cfg.protects)
        depends = list(cluster.ready)
        connection: pulumi.Input[dict[str, Any]] = cluster.connection
        bootstrap: pulumi.Input[str] = cluster.bootstrap_servers
        ca: pulumi.Input[str] = cluster.ca_certificate
    else:
        if not (cfg.bootstrap and cfg.username and cfg.password is not None):
            raise pulumi.RunError("external mode needs kraftform:bootstrapServers, kraftform:username and "
                                  "kraftform:password (pulumi config set --secret kraftform:password ...)")
        username, address = cfg.username, cfg.bootstrap
        connection = pulumi.Output.all(cfg.password).apply(lambda v: Connection(
            address, SASL_SSL, security.sasl_mechanism, username, v[0], cfg.ca_path).props())
        bootstrap = cfg.bootstrap
        if cfg.ca_path and not Path(cfg.ca_path).is_file():
            raise pulumi.RunError(f"kraftform:caPath: {cfg.ca_path} is not a file (the PEM CA of the cluster)")
        ca = Path(cfg.ca_path).read_text() if cfg.ca_path else ""

    def under(parent: pulumi.Resource) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions(parent=parent, depends_on=depends, protect=cfg.protects)

    # One resource for every topic: applied in the CLI's batches, and it refuses to delete a topic itself
    # while the stack protects them (Pulumi's `protect` on it guards `pulumi destroy`).
    made: dict[str, pulumi.Resource] = {"topics": Topics("topics", specs.topics, connection, cfg.protects,
                                                         pulumi.ResourceOptions(depends_on=depends,
                                                                                protect=cfg.protects))}
    access = pulumi.ComponentResource("kraftform:index:Access", "access", {})
    for principal in sorted(declared_principals(specs)):
        user = next((u for u in specs.users if f"User:{u.name}" == principal), None)
        password = None if user is None else secrets[user.name]
        made[principal] = Access(principal, access_props(principal, specs, password), connection, under(access))
    if any(q.entity.user in (None, DEFAULT_ENTITY) for q in specs.quotas):
        made["default-quotas"] = Access("default-quotas", access_props(None, specs, None), connection, under(access))
    # The dynamic ones: set live on the running brokers (the read-only ones are in their server.properties).
    made["broker-settings"] = BrokerSettings("broker-settings", {
        k: v for k, v in specs.cluster.broker_config.items() if (d := definition(k)) is not None and d.dynamic},
        connection, pulumi.ResourceOptions(depends_on=depends, protect=cfg.protects))
    if specs.groups:
        made["group-settings"] = GroupSettings("group-settings", {g.name: dict(g.config) for g in specs.groups},
                                               connection, pulumi.ResourceOptions(depends_on=depends,
                                                                                  protect=cfg.protects))
    levels = declared_features(specs.cluster)
    if levels:  # finalised with UpdateFeatures (a container's format options only count when it is first made)
        made["features"] = Features("features", levels, connection,
                                    pulumi.ResourceOptions(depends_on=depends, protect=cfg.protects))
    connect = connect_clusters(cfg, specs, cluster, made, secrets)
    subjects, registry = schema_registry(cfg, specs, cluster, made)
    deployed, checkpoints = consumers(cfg, specs, cluster, ca, made, secrets, subjects)
    monitoring: dict[str, Any] = {}
    if cfg.monitoring:
        if cluster is None:
            raise pulumi.RunError("kraftform:monitoring runs Prometheus beside the stack's own cluster (mode docker); "
                                  "for an existing cluster, run `kraftform monitoring rules` into your Prometheus")
        watching = Monitoring(specs, cfg.specs_dir, cluster, cfg.spark_image or spark_image(), checkpoints,
                              cfg.monitoring_port, after=cluster.ready)
        monitoring = {"prometheus": watching.prometheus_url}

    def per_profile(values: list[Any]) -> dict[str, dict[str, dict[str, str]]]:
        """Each profile's producer and consumer settings with the connection (users add their own login)."""
        base = {"bootstrap.servers": values[0]["bootstrap"], "security.protocol": SASL_SSL,
                "sasl.mechanism": security.sasl_mechanism}
        return {name: {"producer": {**base, **profile.producer}, "consumer": {**base, **profile.consumer}}
                for name, profile in sorted(specs.profiles.items())}

    client_configs = pulumi.Output.secret(cast(Any, pulumi.Output.all(connection).apply(per_profile)))
    outputs: dict[str, Any] = {"bootstrapServers": bootstrap, "caCertificate": ca, "clientConfigs": client_configs,
                               "adminConnection": pulumi.Output.secret(cast(Any, pulumi.Output.all(connection).apply(
                                   lambda v: admin_connection(v[0])))),
                               "topics": sorted(t.name for t in specs.topics),
                               "consumers": {n: {"container": c.container_name, "volume": c.volume_name}
                                             for n, c in deployed.items()},
                               "monitoring": monitoring,
                               # The schema registry's URL and the declared subjects (`registry` section).
                               "registry": registry,
                               # Each Connect cluster's REST API and kraftform's login to it (curl -u, --cacert).
                               "connect": {name: {"urls": c.urls, "username": REST_USER,
                                                  "password": pulumi.Output.secret(c.rest_password)}
                                           for name, c in connect.items()}}
    for key, value in outputs.items():
        pulumi.export(key, value)
    return Stack(outputs, [*made.values(), *([subjects] if subjects is not None else [])])
