"""Build kraftform's images with no registry: a Debian base from debootstrap, then Kafka and Spark on top.

There is nothing to `docker pull` here (nor at air-gapped sites): the base root filesystem comes from
Debian's packages through `debootstrap --variant=minbase`, is turned into an image by `docker import`,
and the Kafka image installs a JRE from Debian and copies the jars fetched from Maven Central into
/opt/kafka/libs, where the official `apache/kafka` image keeps them. The Spark image installs a JRE and
Python from Debian, kraftform with pyspark from wheels built here (PyPI or pip's cache), and the Kafka
connector's jars from Maven Central, so a consumer container runs `kraftform consumers run` as a user's
machine does. Images are used by name, never pulled. Builds are skipped when the image already exists:
the Spark image's tag carries a digest of kraftform's own code, so a changed job makes a new image.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import docker
from docker.errors import APIError, BuildError, ImageNotFound

import kraftform
from kraftform.artifacts import connector_home, ensure_kafka, metrics_agent
from kraftform.cluster.containers import CONTAINER_UID, KAFKA_LIBS, METRICS_AGENT, kafka_image
from kraftform.errors import EnvironmentMissing
from kraftform.spark.containers import SPARK_CACHE, SPARK_HOME_DIR, SPARK_VENV, WORK_DIR
from kraftform.subprocesses import run_to_end
from kraftform.versions import (
    DEBIAN_SUITE,
    JMX_EXPORTER_VERSION,
    JRE_PACKAGE,
    KAFKA_VERSION,
    KCAT_SUITE,
    SPARK_VERSION,
)

BASE_IMAGE = f"kraftform/debian:{DEBIAN_SUITE}"
KCAT_IMAGE = f"kraftform/kcat:{KCAT_SUITE}"
PROMETHEUS_IMAGE = f"kraftform/prometheus:{DEBIAN_SUITE}"
DEBIAN_MIRROR = "http://deb.debian.org/debian"
#: debootstrap, tar and pip wheel: minutes on a cold cache, never an hour.
BUILD_TIMEOUT_S = 1800
#: A digest of the Dockerfile an image was built from: a changed recipe builds the image again.
RECIPE_LABEL = "dev.kraftform.recipe"

KAFKA_DOCKERFILE = f"""\
FROM {BASE_IMAGE}
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends {JRE_PACKAGE} bash \\
 && rm -rf /var/lib/apt/lists/* \\
 && useradd --uid {CONTAINER_UID} --user-group --no-create-home --home-dir /opt/kafka kafka \\
 && mkdir -p {KAFKA_LIBS} /var/lib/kafka/data /etc/kraftform \\
 && chown -R {CONTAINER_UID}:{CONTAINER_UID} /var/lib/kafka /etc/kraftform
COPY libs/ {KAFKA_LIBS}/
COPY metrics/ /opt/kafka/metrics/
USER {CONTAINER_UID}:{CONTAINER_UID}
WORKDIR /opt/kafka
LABEL dev.kraftform.kafka-version="{{version}}"
"""


def _exists(client: docker.DockerClient, tag: str) -> bool:
    try:
        client.images.get(tag)
        return True
    except ImageNotFound:
        return False


KCAT_DOCKERFILE = f"""\
FROM kraftform/debian:{KCAT_SUITE}
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends kcat ca-certificates \\
 && rm -rf /var/lib/apt/lists/*
USER {CONTAINER_UID}:{CONTAINER_UID}
ENTRYPOINT ["kcat"]
"""


def build_base(client: docker.DockerClient, log: list[str], suite: str = DEBIAN_SUITE) -> str:
    tag = f"kraftform/debian:{suite}"
    if _exists(client, tag):
        log.append(f"{tag}: present")
        return tag
    if shutil.which("debootstrap") is None:
        raise EnvironmentMissing("debootstrap is needed to build the base image (apt-get install debootstrap)")
    with tempfile.TemporaryDirectory(prefix="kraftform-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        done = run_to_end(["debootstrap", "--variant=minbase", suite, str(rootfs), DEBIAN_MIRROR],
                          f"debootstrap {suite}", BUILD_TIMEOUT_S, EnvironmentMissing)
        if done.returncode != 0:
            raise EnvironmentMissing(f"debootstrap failed:\n{done.stderr[-2000:] or done.stdout[-2000:]}")
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        assert tar.stdout is not None
        client.api.import_image_from_stream(tar.stdout, repository="kraftform/debian", tag=suite)
        try:
            tar.wait(timeout=BUILD_TIMEOUT_S)  # docker has read the whole stream: tar is done or hung
        except subprocess.TimeoutExpired:
            tar.kill()
            raise EnvironmentMissing(f"tar of the {suite} root filesystem did not finish within "
                                     f"{BUILD_TIMEOUT_S} s") from None
    if not _exists(client, tag):
        raise EnvironmentMissing(f"docker import did not produce {tag}")
    log.append(f"{tag}: built with debootstrap {suite} (minbase)")
    return tag


def _build(client: docker.DockerClient, tag: str, dockerfile: str,
           fill: Callable[[Path], object] = lambda _context: None) -> None:
    """Build `dockerfile` in a fresh context directory that `fill` puts the files it copies into."""
    with tempfile.TemporaryDirectory(prefix="kraftform-image-") as tmp:
        context = Path(tmp)
        fill(context)
        (context / "Dockerfile").write_text(dockerfile)
        try:
            client.images.build(path=str(context), tag=tag, rm=True, forcerm=True, pull=False)
        except BuildError as exc:
            tail = "\n".join(str(line.get("stream", line.get("error", ""))).rstrip() for line in exc.build_log)
            raise EnvironmentMissing(f"building {tag} failed:\n{tail[-3000:]}") from None


def build_kcat(client: docker.DockerClient, log: list[str]) -> str:
    """kcat from Debian trixie: its librdkafka authenticates with SCRAM against Kafka 4."""
    if _exists(client, KCAT_IMAGE):
        log.append(f"{KCAT_IMAGE}: present")
        return KCAT_IMAGE
    build_base(client, log, KCAT_SUITE)
    _build(client, KCAT_IMAGE, KCAT_DOCKERFILE)
    log.append(f"{KCAT_IMAGE}: built (Debian {KCAT_SUITE} kcat)")
    return KCAT_IMAGE


def _recipe_of(client: docker.DockerClient, tag: str) -> str | None:
    try:
        return str((client.images.get(tag).labels or {}).get(RECIPE_LABEL, ""))
    except ImageNotFound:
        return None


def build_kafka(client: docker.DockerClient, log: list[str], version: str = KAFKA_VERSION) -> str:
    """The Kafka image of `version`; one built from an earlier recipe (before the metrics agent, say) is built
    again, so a cluster started afterwards never runs without what the recipe now adds."""
    tag = kafka_image(version)
    dockerfile = KAFKA_DOCKERFILE.replace("{version}", version)
    recipe = hashlib.sha256(f"{dockerfile}{JMX_EXPORTER_VERSION}".encode()).hexdigest()[:12]
    dockerfile += f'LABEL {RECIPE_LABEL}="{recipe}"\n'
    found = _recipe_of(client, tag)
    if found == recipe:
        log.append(f"{tag}: present")
        return tag
    build_base(client, log)
    home, agent = ensure_kafka(version), metrics_agent()

    def fill(context: Path) -> None:
        shutil.copytree(home / "libs", context / "libs")
        (context / "metrics").mkdir()
        shutil.copy(agent, context / "metrics" / Path(METRICS_AGENT).name)

    _build(client, tag, dockerfile, fill)
    log.append(f"{tag}: built (Kafka {version}, {JRE_PACKAGE}, JMX exporter {JMX_EXPORTER_VERSION})"
               + (" again: its recipe changed" if found is not None else ""))
    return tag


PROMETHEUS_DOCKERFILE = f"""\
FROM {BASE_IMAGE}
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus \\
 && rm -rf /var/lib/apt/lists/* \\
 && mkdir -p /prometheus /etc/prometheus \\
 && chown -R {CONTAINER_UID}:{CONTAINER_UID} /prometheus /etc/prometheus
USER {CONTAINER_UID}:{CONTAINER_UID}
ENTRYPOINT ["/usr/bin/prometheus"]
"""


def build_prometheus(client: docker.DockerClient, log: list[str]) -> str:
    """Prometheus from Debian's package, for the Pulumi stack's `kraftform:monitoring` (the CLI's `monitoring up`
    runs the same package as a process)."""
    if _exists(client, PROMETHEUS_IMAGE):
        log.append(f"{PROMETHEUS_IMAGE}: present")
        return PROMETHEUS_IMAGE
    build_base(client, log)
    _build(client, PROMETHEUS_IMAGE, PROMETHEUS_DOCKERFILE)
    log.append(f"{PROMETHEUS_IMAGE}: built (Debian {DEBIAN_SUITE} prometheus)")
    return PROMETHEUS_IMAGE


SPARK_DOCKERFILE = f"""\
FROM {BASE_IMAGE}
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends {JRE_PACKAGE} python3 python3-venv \\
    procps \\
 && rm -rf /var/lib/apt/lists/* \\
 && useradd --uid {CONTAINER_UID} --user-group --create-home --home-dir {SPARK_HOME_DIR} kraftform \\
 && mkdir -p /etc/kraftform {WORK_DIR} \\
 && chown {CONTAINER_UID}:{CONTAINER_UID} /etc/kraftform {WORK_DIR}
COPY wheels/ /tmp/wheels/
RUN python3 -m venv {SPARK_VENV} \\
 && {SPARK_VENV}/bin/pip install --no-index --no-cache-dir --find-links /tmp/wheels /tmp/wheels/*.whl \\
 && rm -rf /tmp/wheels
COPY connector/ {SPARK_CACHE}/spark-connectors-{SPARK_VERSION}/
COPY kraftform/ /tmp/kraftform/
RUN {SPARK_VENV}/bin/pip install --no-index --no-cache-dir --no-deps /tmp/kraftform/*.whl && rm -rf /tmp/kraftform
ENV KRAFTFORM_CACHE={SPARK_CACHE} PATH={SPARK_VENV}/bin:/usr/local/bin:/usr/bin:/bin PYTHONUNBUFFERED=1
USER {CONTAINER_UID}:{CONTAINER_UID}
WORKDIR {WORK_DIR}
LABEL dev.kraftform.spark-version="{SPARK_VERSION}"
"""


def _project_root() -> Path:
    """The kraftform checkout the running code comes from: the Spark image installs that code."""
    root = Path(kraftform.__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file():
        raise EnvironmentMissing(f"the Spark image is built from a kraftform source checkout; {root} is not one")
    return root


def code_digest() -> str:
    """A digest of kraftform's code and pins: the Spark image's tag, so a changed job makes a new image."""
    root = _project_root()
    digest = hashlib.sha256()
    for path in sorted([root / "pyproject.toml", *(root / "infra" / "kraftform").rglob("*.py")]):
        digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def spark_image() -> str:
    """The locally built Spark image for this code: `kraftform/spark:<spark version>-<code digest>`."""
    return f"kraftform/spark:{SPARK_VERSION}-{code_digest()}"


def build_spark(client: docker.DockerClient, log: list[str]) -> str:
    """JRE, Python, pyspark and kraftform (wheels built here from this checkout and PyPI or pip's cache) and the
    Kafka connector's jars (Maven Central)."""
    tag = spark_image()
    if _exists(client, tag):
        log.append(f"{tag}: present")
        return tag
    build_base(client, log)
    root = _project_root()

    def fill(context: Path) -> None:
        done = run_to_end([sys.executable, "-m", "pip", "wheel", "-q", "--wheel-dir", str(context / "wheels"),
                           f"{root}[spark]"], f"pip wheel {root}[spark]", BUILD_TIMEOUT_S, EnvironmentMissing)
        if done.returncode != 0:
            raise EnvironmentMissing(f"pip wheel {root}[spark] failed:\n{(done.stderr or done.stdout)[-2000:]}")
        # Dependencies and kraftform in separate layers: a change to kraftform's code rebuilds only the last.
        (context / "kraftform").mkdir()
        for wheel in (context / "wheels").glob("kraftform-*.whl"):
            wheel.rename(context / "kraftform" / wheel.name)
        shutil.copytree(connector_home(), context / "connector")

    _build(client, tag, SPARK_DOCKERFILE, fill)
    log.append(f"{tag}: built (pyspark {SPARK_VERSION} with its Kafka connector and this kraftform)")
    for image in client.images.list(name="kraftform/spark"):
        # Earlier builds of other code: 1.7 GB each. One a container still uses stays (Docker refuses).
        for old in (t for t in image.tags if t != tag):
            with contextlib.suppress(APIError):
                client.images.remove(old)
                log.append(f"{old}: removed (an earlier build)")
    return tag
