"""How kraftform reaches a cluster: the `--command-config` file users already have.

Kafka's own tools take a Java `.properties` file (`sasl.jaas.config`, a PEM truststore); kcat and
confluent-kafka take librdkafka keys. Both formats are accepted, so the `admin.properties` written by
`kraftform cluster up`, or the file a platform team already uses with `kafka-topics.sh`, work unchanged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kraftform.cluster.clientconfig import read_client_config
from kraftform.errors import UsageError

_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')
_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True)
class Connection:
    """The facts both client libraries need. The password never appears in `repr`."""

    bootstrap: str
    protocol: str = "PLAINTEXT"
    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    ca_path: str | None = None

    def librdkafka(self) -> dict[str, Any]:
        conf: dict[str, Any] = {"bootstrap.servers": self.bootstrap, "security.protocol": self.protocol,
                                "log_level": 0}
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

    def as_user(self, username: str, password: str, mechanism: str) -> Connection:
        """The same cluster as another SCRAM user (to check that user's password)."""
        return Connection(self.bootstrap, self.protocol, mechanism, username, password, self.ca_path)


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
