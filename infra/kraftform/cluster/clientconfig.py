"""Client configurations for a secure cluster: Java `.properties`, librdkafka `.conf`, Python dicts.

One function per format over the same facts (bootstrap, SCRAM user, CA), so kcat, the Java tools and
confluent-kafka connect the same way. The password is the caller's; these files are written mode 0600.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kraftform.cluster.config import SCRAM_LOGIN, properties_text


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


def java_properties(auth: ClientAuth) -> str:
    jaas = f"{SCRAM_LOGIN} required username={jaas_quote(auth.username)} password={jaas_quote(auth.password)};"
    return properties_text({
        "bootstrap.servers": auth.bootstrap, "security.protocol": "SASL_SSL", "sasl.mechanism": auth.mechanism,
        "sasl.jaas.config": jaas, "ssl.truststore.type": "PEM", "ssl.truststore.location": auth.ca_path,
    }, "kraftform admin client (Java): --command-config for Kafka's tools")


def librdkafka_config(auth: ClientAuth) -> dict[str, str]:
    return {"bootstrap.servers": auth.bootstrap, "security.protocol": "SASL_SSL",
            "sasl.mechanisms": auth.mechanism, "sasl.username": auth.username, "sasl.password": auth.password,
            "ssl.ca.location": auth.ca_path}


def librdkafka_conf(auth: ClientAuth) -> str:
    """kcat -F FILE and confluent-kafka read this `key=value` format."""
    return properties_text(librdkafka_config(auth), "kraftform admin client (librdkafka: kcat -F, confluent-kafka)")


def read_client_config(path: str) -> dict[str, str]:
    """Parse a `.properties`/`.conf` file written above (or by hand) into a dict."""
    out: dict[str, str] = {}
    with open(path, encoding="utf-8") as handle:
        for raw in handle:
            line = raw.strip()
            if line and not line.startswith(("#", "!")) and "=" in line:
                key, value = line.split("=", 1)
                out[key.strip()] = value.strip().replace("\\\\", "\\")
    return out
