"""A class-data-sharing archive of Kafka's classes (AppCDS), for nodes that start fast rather than run fast.

Six JVMs starting together on two cores spend much of it loading and verifying the same classes; mapped from an
archive they do not (a faithful test cluster healthy in about two thirds of the time, docs/testing.md). No step of
setup builds it: the first quick-start cluster on a machine has one node write it as it exits cleanly, and later
clusters map it. It is keyed by Kafka version and JVM, since the JVM refuses an archive of another build.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from kraftform.artifacts import ensure_kafka

#: The JVM writes an archive with an agent loaded (the metrics agent) only when told, and maps one written so only
#: with the same setting.
_AGENT = ("-XX:+UnlockDiagnosticVMOptions", "-XX:+AllowArchivingWithJavaAgent")


def archive_path(kafka_version: str, java: str) -> Path:
    jvm = Path(java).resolve()
    key = hashlib.sha256(f"{jvm} {jvm.stat().st_mtime_ns}".encode()).hexdigest()[:12]
    return ensure_kafka(kafka_version) / f"kraftform-classes-{key}.jsa"


def use_options(archive: Path) -> tuple[str, ...]:
    return (*_AGENT, f"-XX:SharedArchiveFile={archive}")


def dump_options(target: Path) -> tuple[str, ...]:
    # -Xlog:cds=off: the dump lists every class it skips (Kafka ships some in an old class-file format).
    return (*_AGENT, f"-XX:ArchiveClassesAtExit={target}", "-Xlog:cds=off")


def dump_target(archive: Path, node_name: str) -> Path:
    """Where one node writes the archive: a name of its own, adopted only once its JVM has exited cleanly."""
    return archive.with_name(f"{archive.name}.{node_name}.{os.getpid()}.tmp")


def adopt(target: Path, archive: Path, exited_cleanly: bool) -> None:
    """Move a finished dump into place (atomic: a concurrent cluster maps the old one or the new one, never half);
    a dump of a killed JVM may be incomplete and is dropped."""
    if exited_cleanly and target.is_file() and target.stat().st_size > 0:
        os.replace(target, archive)
    else:
        target.unlink(missing_ok=True)
