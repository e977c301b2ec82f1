"""How a client reaches a cluster: one value, `Connection`, and every form kraftform reads or writes it in.

Kafka's own tools take a Java `.properties` file (`sasl.jaas.config`, a PEM truststore); kcat and
confluent-kafka take librdkafka keys; kafka-python its own; Spark's Kafka source and sink `kafka.*` options; the
Pulumi providers a props dict. All are renderings of the same facts (bootstrap, protocol, SASL user, CA), and
both file formats are read back, so the `admin.properties` written by `kraftform cluster up`, or the file a
platform team already uses with `kafka-topics.sh`, work unchanged. The password never appears in `repr`;
files holding it are written mode 0600 by their callers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import javaproperties

from kraftform.cluster.config import PLAIN_LOGIN, SCRAM_LOGIN, properties_text
from kraftform.errors import UsageError

SASL_SSL = "SASL_SSL"
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')
_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", SASL_SSL)
#: Keys only librdkafka's format has: a file holding them is read the way kcat reads it, verbatim.
LIBRDKAFKA_KEYS = ("sasl.username", "sasl.password", "sasl.mechanisms", "ssl.ca.location")
ADMIN_TITLE = "kraftform admin client (Java): --command-config for Kafka's tools"


def jaas_quote(value: str) -> str:
    """A JAAS option value in double quotes; Kafka reads it with Java's StreamTokenizer, which takes
    backslash escapes inside quotes, so a password holding `"` or `\\` survives the round trip."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def jaas_login(mechanism: str, username: str, password: str) -> str:
    """A Java client's `sasl.jaas.config`: PLAIN logs in with PlainLoginModule, the SCRAM mechanisms with
    ScramLoginModule. The one place it is written."""
    module = PLAIN_LOGIN if mechanism == "PLAIN" else SCRAM_LOGIN
    return f"{module} required username={jaas_quote(username)} password={jaas_quote(password)};"


@dataclass(frozen=True)
class Connection:
    """The facts every client library needs. The password never appears in `repr`."""

    bootstrap: str
    protocol: str = "PLAINTEXT"
    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ca_path: str | None = None

    @classmethod
    def scram(cls, bootstrap: str, username: str, password: str, mechanism: str, ca_path: str | None) -> Connection:
        """A SASL_SSL login, what every kraftform cluster listener takes."""
        return cls(bootstrap, SASL_SSL, mechanism, username, password, ca_path)

    def as_user(self, username: str, password: str, mechanism: str) -> Connection:
        """The same cluster as another SASL user (to check that user's password, or to run as a consumer)."""
        return Connection(self.bootstrap, self.protocol, mechanism, username, password, self.ca_path)

    @property
    def logs_in(self) -> bool:
        return bool(self.mechanism) and self.username is not None and self.password is not None

    def librdkafka(self, quiet: bool = True) -> dict[str, Any]:
        """confluent-kafka's and kcat's settings; `quiet` silences librdkafka's own log (kraftform reports
        what it saw through its error callback instead)."""
        conf: dict[str, Any] = {"bootstrap.servers": self.bootstrap, "security.protocol": self.protocol}
        if quiet:
            conf["log_level"] = 0
        if self.mechanism:
            conf.update({"sasl.mechanisms": self.mechanism, "sasl.username": self.username,
                         "sasl.password": self.password})
        if self.ca_path:
            conf["ssl.ca.location"] = self.ca_path
        return conf

    def kafka_python(self) -> dict[str, Any]:
        conf: dict[str, Any] = {"bootstrap_servers": self.bootstrap.split(","), "security_protocol": self.protocol,
                                "client_id": "kraftform"}
        if self.mechanism:
            conf.update({"sasl_mechanism": self.mechanism, "sasl_plain_username": self.username,
                         "sasl_plain_password": self.password})
        if self.ca_path:
            conf["ssl_cafile"] = self.ca_path
        return conf

    def java(self) -> dict[str, str]:
        """The Java client's settings (Kafka's tools, Spark's connector): JAAS login, PEM truststore."""
        props = {"bootstrap.servers": self.bootstrap, "security.protocol": self.protocol}
        if self.mechanism and self.username is not None and self.password is not None:
            props["sasl.mechanism"] = self.mechanism
            props["sasl.jaas.config"] = jaas_login(self.mechanism, self.username, self.password)
        if self.ca_path:
            props.update({"ssl.truststore.type": "PEM", "ssl.truststore.location": self.ca_path})
        return props

    def spark_options(self) -> dict[str, str]:
        """Spark's Kafka source and sink options (`kafka.` + the Java client's settings). They hold the password:
        Spark's redaction settings keep them out of plans, logs and the UI (spark.settings)."""
        return {f"kafka.{key}": value for key, value in self.java().items()}

    def java_properties(self, title: str = ADMIN_TITLE) -> str:
        """A `.properties` file for Kafka's tools (`--command-config`) and `kraftform plan`."""
        return properties_text(self.java(), title)

    def librdkafka_conf(self) -> str:
        """kcat -F FILE reads this `key=value` format verbatim: the text after the first `=` to the end of the
        line is the value, with no escapes (a backslash in a password stays one backslash)."""
        lines = ["# kraftform admin client (librdkafka: kcat -F, confluent-kafka)"]
        lines += [f"{key}={value}" for key, value in sorted(self.librdkafka(quiet=False).items())]
        return "\n".join(lines) + "\n"

    def props(self, ca_pem: str | None = None) -> dict[str, Any]:
        """The Pulumi providers' `connection` input: the CA's text (`ca_pem`, a cluster the stack made) or
        its path (an existing cluster's)."""
        out: dict[str, Any] = {"bootstrap": self.bootstrap, "protocol": self.protocol, "mechanism": self.mechanism,
                               "username": self.username, "password": self.password}
        return {**out, "ca_pem": ca_pem} if ca_pem is not None else {**out, "ca_path": self.ca_path}

    @classmethod
    def from_props(cls, props: dict[str, Any], ca_path: str | None = None) -> Connection:
        """`props` read back; `ca_path` where the caller wrote a `ca_pem` it holds."""
        return cls(props["bootstrap"], props.get("protocol", SASL_SSL), props.get("mechanism"), props.get("username"),
                   props.get("password"), ca_path or props.get("ca_path"))


def read_client_config(path: str) -> dict[str, str]:
    """A client config as its own tools read it: Java `.properties` as java.util.Properties does (Kafka's
    documented multi-line `sasl.jaas.config ... \\` form included), librdkafka `key=value` verbatim."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    java = dict(javaproperties.loads(text))
    if not any(key in java for key in LIBRDKAFKA_KEYS):
        return java
    pairs = (line.strip().split("=", 1) for line in text.splitlines())
    return {kv[0].strip(): kv[1].strip() for kv in pairs if len(kv) == 2 and not kv[0].startswith("#")}


def parse_connection(settings: dict[str, str], source: str) -> Connection:
    """Java or librdkafka client settings -> Connection; `source` names the file in errors."""

    def need(key: str) -> str:
        if not settings.get(key):
            raise UsageError(f"{source}: {key} is not set")
        return settings[key]

    protocol = settings.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in _PROTOCOLS:
        raise UsageError(f"{source}: security.protocol={protocol} is not one of {', '.join(_PROTOCOLS)}")
    mechanism = username = password = None
    if protocol.startswith("SASL"):
        mechanism = settings.get("sasl.mechanism") or settings.get("sasl.mechanisms") or "GSSAPI"
        if not mechanism.startswith("SCRAM-") and mechanism != "PLAIN":
            raise UsageError(f"{source}: sasl.mechanism={mechanism}: kraftform supports SCRAM-SHA-256, "
                             f"SCRAM-SHA-512 and PLAIN")
        if "sasl.jaas.config" in settings:
            options = {k: re.sub(r"\\(.)", r"\1", v)  # undo jaas_quote's escapes
                       for k, v in _JAAS_OPTION.findall(settings["sasl.jaas.config"])}
            if "username" not in options or "password" not in options:
                raise UsageError(f"{source}: sasl.jaas.config has no username=\"...\" password=\"...\"")
            username, password = options["username"], options["password"]
        else:
            username, password = need("sasl.username"), need("sasl.password")
    ca_path = settings.get("ssl.ca.location")
    if ca_path is None and "ssl.truststore.location" in settings:
        if settings.get("ssl.truststore.type", "JKS").upper() != "PEM":
            raise UsageError(f"{source}: ssl.truststore.type must be PEM (a JKS truststore cannot be read "
                             f"by librdkafka); point ssl.truststore.location at the CA certificate in PEM")
        ca_path = settings["ssl.truststore.location"]
    if ca_path is not None and not Path(ca_path).is_file():
        raise UsageError(f"{source}: CA certificate {ca_path} does not exist")
    return Connection(need("bootstrap.servers"), protocol, mechanism, username, password, ca_path)


def read_connection(path: str | Path) -> Connection:
    if not Path(path).is_file():
        raise UsageError(f"{path}: no such command config file (the admin.properties of `kraftform cluster up` "
                         f"or your Kafka tools' --command-config)")
    return parse_connection(read_client_config(str(path)), str(path))
