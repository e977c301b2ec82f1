"""Apache Kafka's jars from Maven Central, laid out like the official image's /opt/kafka/libs.

Kafka is in neither Debian nor PyPI, and there is no image registry to pull from; Maven Central has every
jar. A generated pom names the server, the tools and a logging binding, and `mvn dependency:copy-dependencies`
fills a cache directory once per version. The same directory feeds the local runtime and the image build.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from kraftform.cluster.config import LOG4J2_CONFIG, LOG4J2_FILE
from kraftform.errors import KraftformError
from kraftform.versions import KAFKA_VERSION, LOG4J_VERSION


#: Artifacts of a Kafka installation (group, artifact, version); their dependencies come along.
def kafka_artifacts(version: str = KAFKA_VERSION) -> tuple[tuple[str, str, str], ...]:
    return (
        ("org.apache.kafka", "kafka_2.13", version),
        ("org.apache.kafka", "kafka-tools", version),
        ("org.apache.logging.log4j", "log4j-slf4j-impl", LOG4J_VERSION),
        ("org.apache.logging.log4j", "log4j-core", LOG4J_VERSION),
        ("org.apache.logging.log4j", "log4j-1.2-api", LOG4J_VERSION),
    )




def render_pom(version: str = KAFKA_VERSION) -> str:
    deps = "\n".join(
        f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version></dependency>"
        for g, a, v in kafka_artifacts(version))
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.kraftform</groupId>
  <artifactId>kafka-distribution</artifactId>
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


def ensure_kafka(version: str = KAFKA_VERSION) -> Path:
    """Download Kafka's jars once (idempotent: a complete install is reused); returns the Kafka home."""
    home = kafka_home(version)
    marker = home / ".complete"
    if marker.is_file():
        return home
    if shutil.which("mvn") is None:
        raise KraftformError("Maven (`mvn`) is needed to fetch Kafka from Maven Central; install it "
                             "(apt-get install maven)")
    staging = home.with_name(home.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    (staging / "libs").mkdir(parents=True)
    (staging / "config").mkdir()
    (staging / "pom.xml").write_text(render_pom(version))
    (staging / "config" / LOG4J2_FILE).write_text(LOG4J2_CONFIG)
    done = subprocess.run(
        ["mvn", "-B", "-q", "-f", str(staging / "pom.xml"), "dependency:copy-dependencies",
         f"-DoutputDirectory={staging / 'libs'}", "-DincludeScope=runtime"],
        capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
        raise KraftformError(f"fetching Kafka {version} from Maven Central failed:\n{tail}")
    if not any((staging / "libs").glob(f"kafka_2.13-{version}.jar")):
        raise KraftformError(f"Maven finished but kafka_2.13-{version}.jar is missing from {staging / 'libs'}")
    marker_tmp = staging / ".complete"
    marker_tmp.write_text(version)
    shutil.rmtree(home, ignore_errors=True)
    staging.rename(home)
    return home
