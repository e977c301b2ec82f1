"""Jars from Maven Central: Apache Kafka, laid out like the official image's /opt/kafka/libs, and Spark's Kafka
connector for pyspark.

Kafka is in neither Debian nor PyPI, and there is no image registry to pull from; Maven Central has every
jar. A generated pom names what is wanted, and `mvn dependency:copy-dependencies` fills a cache directory
once per version. The same directories feed the local runtimes and the image builds.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

from kraftform.cluster.config import LOG4J2_CONFIG, LOG4J2_FILE
from kraftform.errors import EnvironmentMissing, UsageError
from kraftform.subprocesses import run_to_end
from kraftform.versions import (
    CONNECT_PLUGIN_SHA256,
    CONNECT_VERSION,
    JMX_EXPORTER_VERSION,
    KAFKA_VERSION,
    LOG4J_VERSION,
    SCALA_BINARY,
    SPARK_VERSION,
)

#: A cold fetch of Kafka or the Spark connector takes a minute or two here; a hung resolution must not hang
#: `kraftform` with it.
MAVEN_TIMEOUT_S = 1200


#: Artifacts of a Kafka installation (group, artifact, version); their dependencies come along.
def kafka_artifacts(version: str = KAFKA_VERSION) -> tuple[tuple[str, str, str], ...]:
    return (
        ("org.apache.kafka", "kafka_2.13", version),
        ("org.apache.kafka", "kafka-tools", version),
        ("org.apache.logging.log4j", "log4j-slf4j-impl", LOG4J_VERSION),
        ("org.apache.logging.log4j", "log4j-core", LOG4J_VERSION),
        ("org.apache.logging.log4j", "log4j-1.2-api", LOG4J_VERSION),
    )




def render_pom(artifacts: tuple[tuple[str, str, str], ...], name: str, version: str,
               exclusions: tuple[str, ...] = ()) -> str:
    """A pom whose dependencies are `artifacts`, each without the `exclusions` ("group:artifact", `*` allowed)."""
    excluded = "".join(f"<exclusion><groupId>{g}</groupId><artifactId>{a}</artifactId></exclusion>"
                       for g, a in (e.split(":", 1) for e in exclusions))
    excluded = f"<exclusions>{excluded}</exclusions>" if excluded else ""
    deps = "\n".join(
        f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version>{excluded}"
        f"</dependency>" for g, a, v in artifacts)
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.kraftform</groupId>
  <artifactId>{name}</artifactId>
  <version>{version}</version>
  <packaging>pom</packaging>
  <dependencies>
{deps}
  </dependencies>
</project>
"""


def cache_root() -> Path:
    return Path(os.environ.get("KRAFTFORM_CACHE", Path.home() / ".cache" / "kraftform"))


def kafka_home(version: str = KAFKA_VERSION) -> Path:
    """Where a version is installed: `libs/` with the jars, `config/` with logging."""
    return cache_root() / f"kafka-{version}"


def _resolve(home: Path, artifacts: tuple[tuple[str, str, str], ...], what: str, expected_jar: str,
             extra_files: dict[str, str] | None = None, exclusions: tuple[str, ...] = ()) -> Path:
    """Fill `home/libs` with `artifacts` and their runtime dependencies, once (a complete directory is reused);
    staged beside it and renamed, so an interrupted download never looks complete."""
    marker = home / ".complete"
    if marker.is_file():
        return home
    if shutil.which("mvn") is None:
        raise EnvironmentMissing(f"Maven (`mvn`) is needed to fetch {what} from Maven Central; install it "
                                 "(apt-get install maven)")
    staging = home.with_name(home.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "libs").mkdir(parents=True)
    for relative, content in (extra_files or {}).items():
        (staging / relative).parent.mkdir(parents=True, exist_ok=True)
        (staging / relative).write_text(content)
    (staging / "pom.xml").write_text(render_pom(artifacts, home.name, "1", exclusions))
    done = run_to_end(
        ["mvn", "-B", "-q", "-f", str(staging / "pom.xml"), "dependency:copy-dependencies",
         f"-DoutputDirectory={staging / 'libs'}", "-DincludeScope=runtime"],
        f"Maven fetching {what}", MAVEN_TIMEOUT_S, EnvironmentMissing)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
        raise EnvironmentMissing(f"fetching {what} from Maven Central failed:\n{tail}")
    if not (staging / "libs" / expected_jar).is_file():
        raise EnvironmentMissing(f"Maven finished but {expected_jar} is missing from {staging / 'libs'}")
    (staging / ".complete").write_text(what)
    shutil.rmtree(home, ignore_errors=True)
    staging.rename(home)
    return home


def ensure_kafka(version: str = KAFKA_VERSION) -> Path:
    """Download Kafka's jars once (idempotent: a complete install is reused); returns the Kafka home."""
    return _resolve(kafka_home(version), kafka_artifacts(version), f"Kafka {version}", f"kafka_2.13-{version}.jar",
                    {f"config/{LOG4J2_FILE}": LOG4J2_CONFIG})


def metrics_agent(version: str = JMX_EXPORTER_VERSION) -> Path:
    """The Prometheus JMX exporter java agent (one shaded jar), fetched once: every Kafka node runs it."""
    jar = f"jmx_prometheus_javaagent-{version}.jar"
    home = _resolve(cache_root() / f"jmx-exporter-{version}",
                    (("io.prometheus.jmx", "jmx_prometheus_javaagent", version),),
                    f"the Prometheus JMX exporter {version}", jar)
    return home / "libs" / jar


#: Spark's Kafka source and sink; its dependencies (kafka-clients, commons-pool2, ...) come along.
def connector_artifact(version: str = SPARK_VERSION) -> tuple[str, str, str]:
    return ("org.apache.spark", f"spark-sql-kafka-0-10_{SCALA_BINARY}", version)


#: Spark's Avro functions (`from_avro`), which pyspark does not ship: Avro consumers decode with them.
def avro_artifact(version: str = SPARK_VERSION) -> tuple[str, str, str]:
    return ("org.apache.spark", f"spark-avro_{SCALA_BINARY}", version)


def _artifact_id(jar: str) -> str:
    """`kafka-clients-3.9.2.jar` -> `kafka-clients`: the name without its version."""
    return re.sub(r"-\d[\w.\-]*\.jar$", "", jar)


def connector_home(version: str = SPARK_VERSION) -> Path:
    """The Kafka connector and spark-avro with their dependencies from Maven Central, fetched once; the Spark image
    copies this."""
    _, artifact, _ = connector_artifact(version)
    return _resolve(cache_root() / f"spark-connectors-{version}", (connector_artifact(version), avro_artifact(version)),
                    f"Spark's Kafka connector and Avro functions {version}", f"{artifact}-{version}.jar")


def connector_jars(pyspark_jars: Path, version: str = SPARK_VERSION) -> list[Path]:
    """The connector's runtime jars that pyspark does not already ship (4 of 13 at 4.2.0: the connector, its
    token provider, kafka-clients, commons-pool2). The others are older copies of pyspark's own (scala-library,
    slf4j, snappy, lz4, hadoop-client); passing them too would put two versions on one classpath."""
    home = connector_home(version)
    shipped = {_artifact_id(p.name) for p in pyspark_jars.glob("*.jar")}
    return sorted(p for p in (home / "libs").glob("*.jar") if _artifact_id(p.name) not in shipped)


#: Kafka Connect's worker: the runtime, its JSON converter and transforms, and the logging binding Kafka's own
#: nodes use. Plugins are not on its class path: each loads from a directory of its own (plugin.path).
def connect_artifacts(version: str = CONNECT_VERSION) -> tuple[tuple[str, str, str], ...]:
    return (
        ("org.apache.kafka", "connect-runtime", version),
        ("org.apache.kafka", "connect-json", version),
        ("org.apache.kafka", "connect-transforms", version),
        *(a for a in kafka_artifacts(version) if a[0] == "org.apache.logging.log4j"),
    )


#: Connect workers log to standard output (the runtime sends it to the worker's log); Log4j 2 reads the
#: properties format without the YAML parser Kafka's own nodes have on their class path.
CONNECT_LOG4J2_FILE = "log4j2.properties"
CONNECT_LOG4J2_CONFIG = """\
status = warn
appender.stdout.type = Console
appender.stdout.name = STDOUT
appender.stdout.layout.type = PatternLayout
appender.stdout.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.stdout.ref = STDOUT
logger.reflections.name = org.reflections
logger.reflections.level = ERROR
"""


def ensure_connect(version: str = CONNECT_VERSION) -> Path:
    """Kafka Connect's worker jars, fetched once per version; returns its home (`libs/`, `config/`)."""
    return _resolve(cache_root() / f"connect-{version}", connect_artifacts(version), f"Kafka Connect {version}",
                    f"connect-runtime-{version}.jar", {f"config/{CONNECT_LOG4J2_FILE}": CONNECT_LOG4J2_CONFIG})


#: What a worker already has: a plugin's own copies would shadow the worker's classes, so none are fetched.
PROVIDED_BY_THE_WORKER = ("org.apache.kafka:*", "org.slf4j:*", "org.apache.logging.log4j:*")

#: Kafka's own plugins, by the name a spec gives them: their jars alone (everything they need is the worker's).
BUILTIN_PLUGINS: dict[str, tuple[str, ...]] = {
    "file": ("connect-file",),
    "mirror": ("connect-mirror", "connect-mirror-client"),
    "basic-auth": ("connect-basic-auth-extension",),
}


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _checked(jar: Path, sha256: str, what: str) -> None:
    actual = sha256_of(jar)
    if actual != sha256:
        raise UsageError(f"{what}: {jar.name} has SHA-256 {actual}, not the declared {sha256}; refusing to load "
                         f"it (a different build than the one reviewed, or a wrong checksum in the specs)")


def builtin_plugin(name: str) -> Path:
    """One of Kafka's own plugins, fetched once and its jars' checksums checked; the directory to put on
    plugin.path."""
    jars = BUILTIN_PLUGINS[name]
    v = CONNECT_VERSION
    home = _resolve(cache_root() / "connect-plugins" / f"kafka-{name}-{v}",
                    tuple(("org.apache.kafka", jar, v) for jar in jars), f"Kafka Connect's {name} plugin {v}",
                    f"{jars[0]}-{v}.jar", exclusions=("*:*",))
    for jar in jars:
        _checked(home / "libs" / f"{jar}-{v}.jar", CONNECT_PLUGIN_SHA256[jar], f"Kafka Connect's {name} plugin")
    return home


def connect_plugin(maven: str, sha256: str, exclude: tuple[str, ...] = (), what: str = "") -> Path:
    """A declared plugin (group:artifact:version) with its runtime dependencies less what the worker provides and
    `exclude`, fetched once; its jar's SHA-256 checked against the declared one every time."""
    group, artifact, version = maven.split(":")
    what = what or f"Connect plugin {maven}"
    home = _resolve(cache_root() / "connect-plugins" / f"{group}_{artifact}_{version}",
                    ((group, artifact, version),), what, f"{artifact}-{version}.jar",
                    exclusions=(*PROVIDED_BY_THE_WORKER, *exclude))
    _checked(home / "libs" / f"{artifact}-{version}.jar", sha256, what)
    return home
