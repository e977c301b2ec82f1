"""Build kraftform's images with no registry: a Debian base from debootstrap, then Kafka on top.

There is nothing to `docker pull` here (nor at air-gapped sites): the base root filesystem comes from
Debian's packages through `debootstrap --variant=minbase`, is turned into an image by `docker import`,
and the Kafka image installs a JRE from Debian and copies the jars fetched from Maven Central into
/opt/kafka/libs, where the official `apache/kafka` image keeps them. Images are used by name, never
pulled. Both builds are skipped when the image already exists.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import docker
from docker.errors import BuildError, ImageNotFound

from kraftform.cluster.containers import CONTAINER_UID, KAFKA_LIBS, LOCAL_IMAGE
from kraftform.errors import EnvironmentMissing
from kraftform.runtime.artifacts import ensure_kafka
from kraftform.versions import DEBIAN_SUITE, JRE_PACKAGE, KAFKA_VERSION, KCAT_SUITE

BASE_IMAGE = f"kraftform/debian:{DEBIAN_SUITE}"
KCAT_IMAGE = f"kraftform/kcat:{KCAT_SUITE}"
DEBIAN_MIRROR = "http://deb.debian.org/debian"

KAFKA_DOCKERFILE = f"""\
FROM {BASE_IMAGE}
RUN apt-get update \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends {JRE_PACKAGE} bash \\
 && rm -rf /var/lib/apt/lists/* \\
 && useradd --uid {CONTAINER_UID} --user-group --no-create-home --home-dir /opt/kafka kafka \\
 && mkdir -p {KAFKA_LIBS} /var/lib/kafka/data /etc/kraftform \\
 && chown -R {CONTAINER_UID}:{CONTAINER_UID} /var/lib/kafka /etc/kraftform
COPY libs/ {KAFKA_LIBS}/
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
        done = subprocess.run(["debootstrap", "--variant=minbase", suite, str(rootfs), DEBIAN_MIRROR],
                              capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise EnvironmentMissing(f"debootstrap failed:\n{done.stderr[-2000:] or done.stdout[-2000:]}")
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        assert tar.stdout is not None
        client.api.import_image_from_stream(tar.stdout, repository="kraftform/debian", tag=suite)
        tar.wait()
    if not _exists(client, tag):
        raise EnvironmentMissing(f"docker import did not produce {tag}")
    log.append(f"{tag}: built with debootstrap {suite} (minbase)")
    return tag


def _build(client: docker.DockerClient, tag: str, dockerfile: str, libs: Path | None = None) -> None:
    with tempfile.TemporaryDirectory(prefix="kraftform-image-") as tmp:
        context = Path(tmp)
        if libs is not None:
            shutil.copytree(libs, context / "libs")
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


def build_kafka(client: docker.DockerClient, log: list[str], version: str = KAFKA_VERSION) -> str:
    tag = LOCAL_IMAGE if version == KAFKA_VERSION else f"kraftform/kafka:{version}"
    if _exists(client, tag):
        log.append(f"{tag}: present")
        return tag
    build_base(client, log)
    home = ensure_kafka(version)
    _build(client, tag, KAFKA_DOCKERFILE.replace("{version}", version), home / "libs")
    log.append(f"{tag}: built (Kafka {version}, {JRE_PACKAGE})")
    return tag


def docker_client() -> docker.DockerClient:
    try:
        client = docker.from_env(timeout=300)
        client.ping()
        return client
    except docker.errors.DockerException as exc:
        raise EnvironmentMissing(f"no Docker engine answers ({exc}); start dockerd") from None
