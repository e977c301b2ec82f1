"""A Kafka Connect worker's configuration, rendered from its spec: distributed mode, SASL_SSL to Kafka as the
Connect cluster's own user (a connector with a `user` of its own logs in as that one), its REST API over TLS behind
HTTP basic authentication, secrets through the environment's config provider.

Pure: paths, hosts and secrets come in, file contents go out; the runtime writes and starts them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from kraftform.cluster.config import properties_text
from kraftform.specset.model import ConnectSpec

#: The worker's REST extension that asks every request for a user and password (Kafka's own, from
#: connect-basic-auth-extension), and the login module it checks them with: a properties file of `user: password`.
BASIC_AUTH_EXTENSION = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"
PROPERTY_FILE_LOGIN = "org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule"
#: The worker's entry point in distributed mode.
CONNECT_MAIN = "org.apache.kafka.connect.cli.ConnectDistributed"
JSON_CONVERTER = "org.apache.kafka.connect.json.JsonConverter"
#: The user kraftform calls the REST API as.
REST_USER = "kraftform"

#: The Kafka client settings that carry the login: each of the worker's clients (its own, and the producers,
#: consumers and admin clients it makes for connectors) gets them.
_LOGIN_KEYS = ("security.protocol", "sasl.mechanism", "sasl.jaas.config", "ssl.truststore.type",
               "ssl.truststore.location")


@dataclass(frozen=True)
class WorkerFiles:
    """Where one worker's files are, as the runtime lays them out."""

    dir: str
    keystore: str
    truststore: str
    jaas: str
    rest_users: str
    #: The directory of connector users' passwords, one file per user (`login_reference`).
    logins: str


@dataclass(frozen=True)
class RenderedWorker:
    index: int
    host: str
    port: int
    properties: dict[str, str]

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.port}"


def rest_port(spec: ConnectSpec, index: int) -> int:
    return spec.rest_port + index


def env_allowlist(spec: ConnectSpec) -> str:
    """The env config provider's `allowlist.pattern` (a Java regex the whole name must match): the declared
    secrets' names; none declared, a pattern no variable name matches."""
    names = spec.environment_names
    return f"^({'|'.join(re.escape(n) for n in names)})$" if names else "^$"


def worker_environment(spec: ConnectSpec, env: Mapping[str, str]) -> dict[str, str]:
    """What a worker process starts with: the basics a JVM reads and the declared connector secrets, never the
    rest of the caller's environment (another user's password, a cloud credential)."""
    return {k: v for k, v in env.items() if k in WORKER_BASE_ENV or k in spec.environment_names}


#: The variables a worker JVM and its plugins read of their own.
WORKER_BASE_ENV = frozenset({"PATH", "HOME", "USER", "LANG", "LC_ALL", "TZ", "TMPDIR"})


def worker_properties(spec: ConnectSpec, index: int, host: str, kafka: Mapping[str, str], files: WorkerFiles,
                      store_password: str, plugin_path: tuple[str, ...], bind: str | None = None) -> dict[str, str]:
    """`kafka`: the Java client settings of the Connect cluster's user (Connection.java()); kraftform's settings
    are written after the spec's own `config`, which `validate` keeps off them. `bind`: the address the REST API
    listens on where it is not `host`, the name other workers reach it by (a container's)."""
    login = {k: v for k, v in kafka.items() if k in _LOGIN_KEYS}
    topics = spec.internal_topics
    port = rest_port(spec, index)
    props = {
        "key.converter": JSON_CONVERTER, "value.converter": JSON_CONVERTER,
        "key.converter.schemas.enable": "false", "value.converter.schemas.enable": "false",
        **spec.config,
        "bootstrap.servers": kafka["bootstrap.servers"], **login,
        **{f"{client}.{k}": v for client in ("producer", "consumer", "admin") for k, v in login.items()},
        "group.id": spec.name,
        "config.storage.topic": topics["config"], "offset.storage.topic": topics["offset"],
        "status.storage.topic": topics["status"],
        "config.storage.replication.factor": str(spec.replication_factor),
        "offset.storage.replication.factor": str(spec.replication_factor),
        "status.storage.replication.factor": str(spec.replication_factor),
        "offset.storage.partitions": str(spec.offsets_partitions),
        "status.storage.partitions": str(spec.status_partitions),
        "listeners": f"https://{bind or host}:{port}",
        "rest.advertised.listener": "https", "rest.advertised.host.name": host, "rest.advertised.port": str(port),
        "listeners.https.ssl.keystore.type": "PKCS12", "listeners.https.ssl.keystore.location": files.keystore,
        "listeners.https.ssl.keystore.password": store_password, "listeners.https.ssl.key.password": store_password,
        "listeners.https.ssl.truststore.type": "PKCS12", "listeners.https.ssl.truststore.location": files.truststore,
        "listeners.https.ssl.truststore.password": store_password,
        "listeners.https.ssl.client.auth": "none",
        "rest.extension.classes": BASIC_AUTH_EXTENSION,
        "plugin.path": ",".join(plugin_path),
        # Connector secrets as ${env:NAME}, connector users' passwords as ${dir:LOGINS:USER}: resolved in the worker
        # when a task starts, never stored in Kafka; the directory provider reads nothing outside the logins.
        "config.providers": "env,dir",
        "config.providers.env.class": "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
        "config.providers.dir.class": "org.apache.kafka.common.config.provider.DirectoryConfigProvider",
        "config.providers.dir.param.allowed.paths": files.logins,
        # Only the variables the connectors declare resolve (`validate` refuses a reference written by hand), so
        # a connector config cannot read the worker's other variables: cloud credentials, a CLI's passwords.
        "config.providers.env.param.allowlist.pattern": env_allowlist(spec),
        # A connector may change its clients' login and nothing else of them (kraftform sets it from the
        # connector's `user`, and `validate` keeps it out of hand-written configs).
        "connector.client.config.override.policy": "Principal",
    }
    return props


def worker_properties_text(spec: ConnectSpec, index: int, props: Mapping[str, str]) -> str:
    return properties_text(dict(props), f"kraftform: worker {index} of Kafka Connect cluster {spec.name}. "
                                        f"Generated; do not edit.")


def jaas_config(rest_users_path: str) -> str:
    """The static JAAS file the basic-auth extension reads its login module from (`KafkaConnect` entry)."""
    return (f"KafkaConnect {{\n  {PROPERTY_FILE_LOGIN} required\n"
            f"  file=\"{rest_users_path}\";\n}};\n")


def rest_users(password: str) -> str:
    """The REST API's one user, as PropertyFileLoginModule reads it (`user: password`)."""
    return f"{REST_USER}: {password}\n"


def worker_java_options(heap_bytes: int, jaas_path: str, log4j_path: str) -> tuple[str, ...]:
    mib = max(64, heap_bytes // (1024 * 1024))
    return (f"-Xms{mib}m", f"-Xmx{mib}m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-Djava.awt.headless=true",
            f"-Djava.security.auth.login.config={jaas_path}", f"-Dlog4j2.configurationFile={log4j_path}")
