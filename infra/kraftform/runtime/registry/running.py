"""The schema registry kraftform runs (Apicurio Registry, `registry_app.py`): the JVM beside a local cluster, the
registry of either runtime (`registry_container`: the container beside a Docker one), and its clients.

Its files live under `<state>/registry/`: `config/application.properties` (0600: the key stores' password; Quarkus
reads it from the working directory, so no password is on a command line), its TLS key store (a certificate from
the cluster's CA for its loopback address) and trust store (that CA), kraftform's own client certificate and key
(0600: the registry admits no one without a certificate from the cluster's CA), its H2 database (subjects survive
a restart) and its log. It binds the cluster's loopback range at 127.A.3.1 and the declared port, HTTPS only.

The process is found by its directory, which its command line names: a kill between its launch and any record
leaves no JVM kraftform does not know.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from kraftform.errors import UsageError
from kraftform.kafka.credentials import read_secret
from kraftform.registry.rest import RegistryRest
from kraftform.registry_app import ensure_registry
from kraftform.runtime.nodes import deployment as dep
from kraftform.runtime.nodes.local import java_binary, last_error_line, loopback_base, tail
from kraftform.runtime.registry.base import START_TIMEOUT_S, KraftformRegistry, Progress
from kraftform.specset.model import ConsumerSpec, RegistrySpec, SpecSet

LOG_FILE = "registry.log"
#: In the JVM's command line: how its process is found (`_pids`).
MARKER = "-Dkraftform.registry.dir="


def registry_host(state_dir: Path) -> str:
    return f"{loopback_base(state_dir)}3.1"


class LocalRegistry(KraftformRegistry):
    """The registry of one local cluster's state directory: a JVM on the cluster's loopback range."""

    def __init__(self, state_dir: Path, spec: RegistrySpec) -> None:
        super().__init__(state_dir, spec, registry_host(state_dir.resolve()))

    # --- process ----------------------------------------------------------------------------------------------

    def _pids(self) -> list[int]:
        """The registry JVMs whose command line names this directory (the one started here, or one a kill left)."""
        wanted = f"{MARKER}{self.dir}".encode()
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            with contextlib.suppress(OSError):
                if wanted in (entry / "cmdline").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
        return found

    def running(self) -> bool:
        return bool(self._pids())

    def up(self, progress: Progress, timeout: float = START_TIMEOUT_S) -> str:
        """Start the registry unless it runs; return its URL once it answers kraftform's authenticated request."""
        if self._pids():
            self._wait(timeout)
            return self.url
        jar = ensure_registry()
        self.write_files(["localhost", self.host], self.host, str(self.dir / "tls"))
        log = self.dir / LOG_FILE
        progress(f"starting the schema registry on {self.url} ...")
        command = [java_binary(), f"-Xmx{self.spec.heap_bytes // (1024 * 1024)}m", f"{MARKER}{self.dir}",
                   "-jar", str(jar)]
        with open(log, "ab") as out:
            out.write(f"=== kraftform: starting the registry at {time.strftime('%H:%M:%S')}\n".encode())
            out.flush()
            started = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       start_new_session=True, cwd=self.dir, env=self._environment())
        self._wait(timeout, lambda: started.poll() is None)
        return self.url

    def _wait(self, timeout: float, alive: Callable[[], bool] | None = None) -> None:
        """`alive`: whether the JVM runs (by default, found by its directory: a JVM just launched may not show its
        command line yet)."""
        log, alive = self.dir / LOG_FILE, alive or self.running
        self.wait_answered(timeout, lambda: None if alive() else
                           f"the schema registry exited: {last_error_line(tail(log))} (its log: {log})")

    def _environment(self) -> dict[str, str]:
        """The basics and where its database lies (an H2 file: subjects survive a restart); none of the CLI's
        secrets."""
        basics = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TZ", "JAVA_HOME")}
        return {**basics, "REGISTRY_DATASOURCE_URL": f"jdbc:h2:file:{self.dir / 'db' / 'registry_db'}"}

    def down(self, purge: bool = False, grace: float = 30.0) -> None:
        """SIGTERM (the database closes cleanly), SIGKILL after `grace`; `purge` removes its files and subjects."""
        pids = self._pids()
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while self._pids() and time.monotonic() < deadline:
            time.sleep(0.2)
        for pid in self._pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if purge:
            shutil.rmtree(self.dir, ignore_errors=True)


def runtime_registry(state_dir: Path, spec: RegistrySpec) -> KraftformRegistry:
    """The registry beside the cluster in `state_dir`, in the cluster's runtime."""
    if dep.load(state_dir).runtime == "docker":
        from kraftform.runtime.registry.container import DockerRegistry

        return DockerRegistry.beside(state_dir, spec)
    return LocalRegistry(state_dir, spec)


def stop_registry(state_dir: Path, purge: bool = False) -> bool:
    """The registry beside the cluster in `state_dir` stopped, whatever the specs now declare (or if they no
    longer load): before the cluster goes, or by `registry down`. False: none was ever started there."""
    if not (state_dir / "registry").is_dir():
        return False
    runtime_registry(state_dir, RegistrySpec()).down(purge=purge)
    return True


def registry_client(specs: SpecSet, state_dir: Path | None) -> RegistryRest:
    """The registry the specs name: an external one by its URL (its password read now), or the one kraftform runs
    beside the cluster in `state_dir`."""
    spec = specs.registry
    if spec is None:
        raise UsageError("the specs declare no `registry` section")
    if spec.url is not None:
        password = read_secret(spec.password) if spec.password is not None else None
        if spec.password is not None and password is None:
            raise UsageError(f"{spec.location}: the registry's password is not set ({spec.password})")
        return RegistryRest(spec.url.rstrip("/"), user=spec.username, password=password)
    if state_dir is None:
        raise UsageError(f"{spec.location}: the registry kraftform runs is found through the cluster's state "
                         f"directory (--state-dir); for a cluster kraftform did not make, give `registry.url`")
    registry = runtime_registry(state_dir, spec)
    if not registry.running():
        raise UsageError(f"the schema registry beside {state_dir} is not running; start it with "
                         f"`kraftform registry up --state-dir {state_dir}`")
    return registry.client()


def avro_writers(specs: SpecSet, state_dir: Path | None, consumer: ConsumerSpec) -> dict[str, str]:
    """The writer schemas an Avro consumer's job decodes with, read from the registry the specs name when it is
    deployed or started; nothing for any other consumer."""
    if consumer.value.format != "avro":
        return {}
    from kraftform.registry.reconcile import writer_schemas

    return writer_schemas(registry_client(specs, state_dir), specs, consumer)


def declared_schema_id(specs: SpecSet, state_dir: Path | None, consumer: ConsumerSpec) -> int | None:
    """The id of an Avro consumer's declared value schema in the registry the specs name; None for any other
    consumer."""
    if consumer.value.format != "avro":
        return None
    from kraftform.registry import reconcile

    return reconcile.declared_schema_id(registry_client(specs, state_dir), specs, consumer)
