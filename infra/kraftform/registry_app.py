"""The schema registry kraftform runs: Apicurio Registry, built from Maven Central alone.

No registry image or distribution can be pulled here, and Confluent's registry is not on Maven Central. Apicurio
publishes its application jar there; a Quarkus build around it (`quarkus-maven-plugin`'s `build` goal) makes a
runnable application, cached once per version like Kafka's jars (`artifacts.py`). Three things the build needs
that are not obvious, each found by a build that failed or served nothing:

- the app jar depends on everit's JSON Schema library from JitPack (not reachable): excluded, and the same
  library's Central coordinates added;
- the app jar carries no Jandex index: without `quarkus.index-dependency` naming it, the build succeeds and every
  API answers 404;
- the app jar's own `%prod.quarkus.package.type=legacy-jar` wins over a POM property: the package type goes on
  the command line.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from kraftform.artifacts import MAVEN_TIMEOUT_S, cache_root
from kraftform.errors import EnvironmentMissing
from kraftform.subprocesses import run_to_end
from kraftform.versions import REGISTRY_EVERIT_JSON_SCHEMA, REGISTRY_QUARKUS_VERSION, REGISTRY_VERSION

#: Apicurio's parent POM names Confluent's and JitPack's repositories: every look-up there fails (unknown host)
#: before Central answers. Mirroring every repository to Central saves those failures.
MAVEN_SETTINGS = """<settings><mirrors><mirror><id>central-only</id><mirrorOf>*</mirrorOf>
<url>https://repo.maven.apache.org/maven2</url></mirror></mirrors></settings>
"""

APPLICATION_PROPERTIES = """\
quarkus.index-dependency.registry-app.group-id=io.apicurio
quarkus.index-dependency.registry-app.artifact-id=apicurio-registry-app
"""


def render_build_pom(version: str = REGISTRY_VERSION) -> str:
    """The Maven project of the registry application: Apicurio's BOM for every library's version, its app jar
    (less the JitPack artifact), and Quarkus' build."""
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.kraftform</groupId>
  <artifactId>kraftform-registry</artifactId>
  <version>{version}</version>
  <properties>
    <maven.compiler.release>17</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencyManagement>
    <dependencies>
      <dependency><groupId>io.apicurio</groupId><artifactId>apicurio-registry</artifactId>
        <version>{version}</version><type>pom</type><scope>import</scope></dependency>
    </dependencies>
  </dependencyManagement>
  <dependencies>
    <dependency><groupId>io.apicurio</groupId><artifactId>apicurio-registry-app</artifactId>
      <version>{version}</version>
      <exclusions><exclusion><groupId>com.github.everit-org.json-schema</groupId>
        <artifactId>org.everit.json.schema</artifactId></exclusion></exclusions></dependency>
    <dependency><groupId>com.github.erosb</groupId><artifactId>everit-json-schema</artifactId>
      <version>{REGISTRY_EVERIT_JSON_SCHEMA}</version></dependency>
  </dependencies>
  <build>
    <plugins>
      <plugin><groupId>io.quarkus</groupId><artifactId>quarkus-maven-plugin</artifactId>
        <version>{REGISTRY_QUARKUS_VERSION}</version>
        <executions><execution><goals><goal>build</goal></goals></execution></executions></plugin>
    </plugins>
  </build>
</project>
"""


def registry_home(version: str = REGISTRY_VERSION) -> Path:
    return cache_root() / f"apicurio-registry-{version}"


def registry_jar(version: str = REGISTRY_VERSION) -> Path:
    """The runnable application (`java -jar`), once `ensure_registry` built it."""
    return registry_home(version) / "quarkus-app" / "quarkus-run.jar"


def ensure_registry(version: str = REGISTRY_VERSION) -> Path:
    """Build the registry once per version (about 2 minutes from an empty Maven repository, 1 again); staged beside
    its home and renamed, so an interrupted build never looks complete. Returns the runnable jar."""
    home = registry_home(version)
    if (home / ".complete").is_file():
        return registry_jar(version)
    if shutil.which("mvn") is None:
        raise EnvironmentMissing("Maven (`mvn`) is needed to build the schema registry from Maven Central; install "
                                 "it (apt-get install maven)")
    staging = home.with_name(home.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    resources = staging / "src" / "main" / "resources"
    resources.mkdir(parents=True)
    (resources / "application.properties").write_text(APPLICATION_PROPERTIES)
    (staging / "pom.xml").write_text(render_build_pom(version))
    (staging / "settings.xml").write_text(MAVEN_SETTINGS)
    # A Maven repository of its own: `scripts/setup` builds it beside the images, whose Maven fetches would
    # otherwise write the same local repository at the same time (Maven does not lock it).
    done = run_to_end(["mvn", "-B", "-q", "-s", str(staging / "settings.xml"), "-f", str(staging / "pom.xml"),
                       f"-Dmaven.repo.local={cache_root() / 'maven-registry'}", "package",
                       "-Dquarkus.package.type=fast-jar"],
                      f"Maven building Apicurio Registry {version}", MAVEN_TIMEOUT_S, EnvironmentMissing)
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-20:])
        raise EnvironmentMissing(f"building Apicurio Registry {version} from Maven Central failed:\n{tail}")
    app = staging / "target" / "quarkus-app"
    if not (app / "quarkus-run.jar").is_file():
        raise EnvironmentMissing(f"Maven finished but {app / 'quarkus-run.jar'} is missing")
    app.rename(staging / "quarkus-app")
    shutil.rmtree(staging / "target", ignore_errors=True)
    (staging / ".complete").write_text(f"Apicurio Registry {version}")
    shutil.rmtree(home, ignore_errors=True)
    staging.rename(home)
    return registry_jar(version)
