"""Pinned versions of the non-Python parts kraftform runs. Python packages are pinned in pyproject.toml.

Kafka comes from Maven Central (`org.apache.kafka:kafka_2.13`), never from a registry of images; so does
Spark's Kafka connector (`org.apache.spark:spark-sql-kafka-0-10_2.13`), at pyspark's version.
"""

from __future__ import annotations

#: The Apache Kafka release kraftform provisions and tests against: the newest 4.x whose full artifact set
#: (server and kafka-tools with their dependencies) is on Maven Central. 4.4.0's resolved whole on 2026-11-25.
KAFKA_VERSION = "4.4.0"

#: Kafka 4 releases a spec may ask for: those whose full artifact set Maven Central has.
SUPPORTED_KAFKA_VERSIONS = ("4.0", "4.1", "4.2", "4.3", "4.4")


def supported_kafka(version: str) -> bool:
    """Whether a Kafka version ("4.3.1") belongs to a supported release."""
    return version.rsplit(".", 1)[0] in SUPPORTED_KAFKA_VERSIONS


#: The supported releases as an error message names them.
SUPPORTED_KAFKA_TEXT = ", ".join(v + ".x" for v in SUPPORTED_KAFKA_VERSIONS)

#: Logging for the Kafka JVMs: Kafka 4 logs through SLF4J to Log4j 2, as the official image does.
#: Kafka 4.3 and 4.4 build against SLF4J 1.7, so the binding is Log4j 2's SLF4J 1.x bridge.
LOG4J_VERSION = "2.24.3"

#: Kafka Connect (connect-runtime and Kafka's own plugins: FileStream source and sink, MirrorMaker 2, and the REST
#: API's basic authentication), one release for all: the newest whose whole set Maven Central serves here. On
#: 2026-11-26 it served connect-runtime 4.4.0 but not connect-file, connect-mirror or connect-basic-auth-extension
#: 4.4.0, and 4.3.1's plugins do not load into a 4.4 worker (4.4 moved AppInfoParser, which they call, to
#: `...utils.internals`: NoClassDefFoundError). So workers run 4.3.1, whose clients speak to 4.4 brokers as any
#: 4.3 client does. Each plugin jar's SHA-256 is checked after download.
CONNECT_VERSION = "4.3.1"
CONNECT_PLUGIN_SHA256 = {
    "connect-file": "e330c491309d8f839f2abd7260c72a3687d6d82ecf2ba0f7699a46d41a46dcac",
    "connect-mirror": "0d091c7ba172827dc42ed09fdf4390876a90ab627fd8d2bb002016f9785617e1",
    "connect-mirror-client": "c11ebb023021dccb8f18c6b57019b9dbe7c74e0b9495196a895a5d40b9faf1a8",
    "connect-basic-auth-extension": "2afdb6d8312063674d2ad243c2f4259ea2394fe261e11091da2969628b123838",
}

#: The Prometheus JMX exporter java agent every Kafka node runs (io.prometheus.jmx:jmx_prometheus_javaagent): the
#: newest Maven Central serves here (1.x is not served).
JMX_EXPORTER_VERSION = "0.20.0"

#: Debian release of the locally built base image (debootstrap) and its Java runtime package.
DEBIAN_SUITE = "bookworm"
JRE_PACKAGE = "openjdk-17-jre-headless"

#: kcat needs librdkafka >= 2.6.1 for SCRAM against Kafka 4 (librdkafka#4895); bookworm ships 2.0.2, so the
#: kcat image is built from Debian trixie.
KCAT_SUITE = "trixie"

#: Spark: pyspark (pyproject.toml's `spark` extra pins the same version; a unit test holds them together) and
#: its Kafka connector from Maven Central. 4.2.0 is the newest pair that exists: pyspark 4.3.0 is on PyPI but
#: spark-sql-kafka-0-10_2.13:4.3.0 is not on Maven Central (checked 2026-11-23).
SPARK_VERSION = "4.2.0"
SCALA_BINARY = "2.13"

#: The schema registry kraftform runs (`registry_app.py`): Apicurio Registry, built as a Quarkus application around
#: its app jar from Maven Central. 2.1.5.Final is the newest whose every artifact Central serves here: 2.2.1 to
#: 2.6.13 need modules it does not serve, 3.x's parent POM or sibling modules are missing (../shared/
#: schema-registry.md, checked 2026-11-27). Quarkus is the version 2.1.5's BOM pins; everit's JSON Schema library
#: replaces the JitPack artifact the app jar names (same library, Central coordinates).
REGISTRY_VERSION = "2.1.5.Final"
REGISTRY_QUARKUS_VERSION = "2.2.3.Final"
REGISTRY_EVERIT_JSON_SCHEMA = "1.14.0"
