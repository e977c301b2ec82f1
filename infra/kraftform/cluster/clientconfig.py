"""Client configurations for a secure cluster: Java `.properties`, librdkafka `.conf`, Python dicts.

One function per format over the same facts (bootstrap, SCRAM user, CA), so kcat, the Java tools and
confluent-kafka connect the same way. The password is the caller's; these files are written mode 0600.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import javaproperties

from kraftform.cluster.config import PLAIN_LOGIN, SCRAM_LOGIN, properties_text


@dataclass(frozen=True)
class ClientAuth:
    bootstrap: str
    username: str
    password: str = field(repr=False)
    mechanism: str
    ca_path: str


def jaas_quote(value: str) -> str:
    """A JAAS option value in double quotes; Kafka reads it with Java's StreamTokenizer, which takes
    backslash escapes inside quotes, so a password holding `"` or `\\` survives the round trip."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def jaas_login(mechanism: str, username: str, password: str) -> str:
    """A Java client's `sasl.jaas.config` for a SASL login: the one place it is written (Java properties,
    Spark's `kafka.*` options and Kafka's tools all take it). PLAIN logs in with PlainLoginModule, the SCRAM
    mechanisms with ScramLoginModule."""
    module = PLAIN_LOGIN if mechanism == "PLAIN" else SCRAM_LOGIN
    return f"{module} required username={jaas_quote(username)} password={jaas_quote(password)};"


def java_properties(auth: ClientAuth, title: str = "kraftform admin client (Java): --command-config for Kafka's tools"
                    ) -> str:
    jaas = jaas_login(auth.mechanism, auth.username, auth.password)
    return properties_text({
        "bootstrap.servers": auth.bootstrap, "security.protocol": "SASL_SSL", "sasl.mechanism": auth.mechanism,
        "sasl.jaas.config": jaas, "ssl.truststore.type": "PEM", "ssl.truststore.location": auth.ca_path,
    }, title)


def librdkafka_config(auth: ClientAuth) -> dict[str, str]:
    return {"bootstrap.servers": auth.bootstrap, "security.protocol": "SASL_SSL",
            "sasl.mechanisms": auth.mechanism, "sasl.username": auth.username, "sasl.password": auth.password,
            "ssl.ca.location": auth.ca_path}


def librdkafka_conf(auth: ClientAuth) -> str:
    """kcat -F FILE reads this `key=value` format verbatim: the text after the first `=` to the end of the
    line is the value, with no escapes (a backslash in a password stays one backslash)."""
    lines = ["# kraftform admin client (librdkafka: kcat -F, confluent-kafka)"]
    lines += [f"{key}={value}" for key, value in sorted(librdkafka_config(auth).items())]
    return "\n".join(lines) + "\n"


#: Keys only librdkafka's format has: a file holding them is read the way kcat reads it, verbatim.
LIBRDKAFKA_KEYS = ("sasl.username", "sasl.password", "sasl.mechanisms", "ssl.ca.location")


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
