"""The schema registry kraftform runs: Apicurio Registry, built from Maven Central alone.

No registry image or distribution can be pulled here, and Confluent's registry is not on Maven Central. Apicurio
publishes its application jar there; a Quarkus build around it (`quarkus-maven-plugin`'s `build` goal) makes a
runnable application, cached once per version and build like Kafka's jars (`artifacts.py`). What the build needs
that is not obvious, each found by a build that failed, served nothing or let anyone write:

- the app jar depends on everit's JSON Schema library from JitPack (not reachable): excluded, and the same
  library's Central coordinates added;
- the app jar carries no Jandex index: without `quarkus.index-dependency` naming it, the build succeeds and every
  API answers 404;
- the app jar's own `%prod.quarkus.package.type=legacy-jar` wins over a POM property: the package type goes on
  the command line;
- Apicurio 2.x authorizes nothing without an OIDC server: kraftform's `java/CertificateRoles.java` gives a client
  certificate's holder the reader role, and kraftform's own the writer role, which the build's HTTP permissions
  require of writes (`APPLICATION_PROPERTIES` says which settings that takes).
"""

from __future__ import annotations

import hashlib
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

#: kraftform's own Java in the application: the roles a client certificate gives (`CertificateRoles.java`).
JAVA_SOURCES = Path(__file__).parent / "java"

APPLICATION_PROPERTIES = """\
quarkus.index-dependency.registry-app.group-id=io.apicurio
quarkus.index-dependency.registry-app.artifact-id=apicurio-registry-app
# Build-time: Quarkus installs its client-certificate authentication only when the build asks for client certificates
# (at run time alone the handshake demands one, but every request stays anonymous to the permissions below).
quarkus.http.ssl.client-auth=required
# Apicurio's own authentication mechanism (OIDC, off without a Keycloak) would stand in for the certificate's and
# answer a denied request with a challenge it cannot make (a NullPointerException, the request left hanging):
# certificates are the only authentication here.
quarkus.arc.exclude-types=io.apicurio.registry.services.auth.CustomAuthenticationMechanism
# Every certificate from the cluster's CA reads; writes need the writer role (CertificateRoles.java).
quarkus.http.auth.permission.read.paths=/*
quarkus.http.auth.permission.read.methods=GET,HEAD,OPTIONS
quarkus.http.auth.permission.read.policy=readers
quarkus.http.auth.policy.readers.roles-allowed=reader
quarkus.http.auth.permission.write.paths=/*
quarkus.http.auth.permission.write.methods=POST,PUT,PATCH,DELETE
quarkus.http.auth.permission.write.policy=writers
quarkus.http.auth.policy.writers.roles-allowed=writer
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
    <maven.compiler.source>17</maven.compiler.source>
    <maven.compiler.target>17</maven.compiler.target>
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


def _build_digest(version: str) -> str:
    """What the build is made of (its pom, settings, properties and kraftform's Java): a build kept in the cache
    is used only by the kraftform that would make the same one."""
    digest = hashlib.sha256()
    for part in (render_build_pom(version), MAVEN_SETTINGS, APPLICATION_PROPERTIES,
                 *(p.read_text() for p in sorted(JAVA_SOURCES.glob("*.java")))):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:12]


def registry_home(version: str = REGISTRY_VERSION) -> Path:
    return cache_root() / f"apicurio-registry-{version}-{_build_digest(version)}"


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
    sources = staging / "src" / "main" / "java" / "dev" / "kraftform" / "registry"
    sources.mkdir(parents=True)
    for source in JAVA_SOURCES.glob("*.java"):
        shutil.copy(source, sources)
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
