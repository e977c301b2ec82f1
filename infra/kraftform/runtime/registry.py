"""The schema registry kraftform runs beside a local cluster: Apicurio Registry (`registry_app.py`), one JVM.

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
import json
import os
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from kraftform.cluster.certificates import issue, pkcs12_keystore, pkcs12_truststore
from kraftform.errors import ClusterUnhealthy, ConnectionFailed, KafkaRequestFailed, UsageError
from kraftform.kafka.credentials import read_secret
from kraftform.registry.rest import RegistryRest
from kraftform.registry_app import ensure_registry
from kraftform.runtime import deployment as dep
from kraftform.runtime.local import java_binary, last_error_line, loopback_base, tail
from kraftform.specset.model import ConsumerSpec, RegistrySpec, SpecSet
from kraftform.statefiles import PRIVATE, read_json, write_atomic
from kraftform.waiting import NotYet, poll

#: The API kraftform speaks, Confluent's, under Apicurio's root.
CCOMPAT_PATH = "/apis/ccompat/v6"
#: The registry's first start prepares its database: 6-15 s here; a loaded machine takes longer.
START_TIMEOUT_S = 120.0
LOG_FILE = "registry.log"
SECRETS_FILE = "secrets.json"
#: The common name of kraftform's client certificate: what the registry knows kraftform by.
CLIENT_NAME = "kraftform"
#: In the JVM's command line: how its process is found (`_pids`).
MARKER = "-Dkraftform.registry.dir="

Progress = Callable[[str], None]


def registry_host(state_dir: Path) -> str:
    return f"{loopback_base(state_dir)}3.1"


class LocalRegistry:
    """The registry of one local cluster's state directory."""

    def __init__(self, state_dir: Path, spec: RegistrySpec) -> None:
        self.state_dir = state_dir.resolve()
        self.spec = spec
        self.dir = self.state_dir / "registry"

    @property
    def url(self) -> str:
        return f"https://{registry_host(self.state_dir)}:{self.spec.port}{CCOMPAT_PATH}"

    def client(self, timeout: float = 30.0) -> RegistryRest:
        """kraftform's client: the cluster's CA verifies the registry, kraftform's certificate identifies it."""
        return RegistryRest(self.url, str(self.state_dir / "ca.pem"), str(self.dir / "client.pem"),
                            str(self.dir / "client.key"), timeout=timeout)

    # --- files ------------------------------------------------------------------------------------------------

    def _store_password(self) -> str:
        path = self.dir / SECRETS_FILE
        if path.is_file():
            return str(read_json(path, "the registry's key store password")["store_password"])
        made = secrets.token_urlsafe(24)
        write_atomic(path, json.dumps({"store_password": made}), PRIVATE)
        return made

    def _write_files(self) -> None:
        """The TLS material (made once: a restart keeps the certificates clients may have pinned) and the
        configuration (written each start: the port or heap may have changed)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self.dir.chmod(0o700)
        password = self._store_password()
        tls = self.dir / "tls"
        host = registry_host(self.state_dir)
        if not (tls / "keystore.p12").is_file():
            ca = dep.load_secrets(self.state_dir).ca
            server = issue(ca, f"registry {host}", ["localhost"], [host])
            client = issue(ca, CLIENT_NAME)
            write_atomic(tls / "truststore.p12", pkcs12_truststore(ca.cert_pem, password))
            write_atomic(self.dir / "client.pem", client.cert_pem)
            write_atomic(self.dir / "client.key", client.key_pem, PRIVATE)
            write_atomic(tls / "keystore.p12", pkcs12_keystore(server, password), PRIVATE)
        write_atomic(self.dir / "config" / "application.properties", "\n".join([
            f"quarkus.http.host={host}",
            f"quarkus.http.ssl-port={self.spec.port}",
            # Plain HTTP is not served at all; the port Quarkus would bind for it is the TLS one's neighbour.
            "quarkus.http.insecure-requests=disabled",
            f"quarkus.http.port={self.spec.port + 1}",
            f"quarkus.http.ssl.certificate.key-store-file={tls / 'keystore.p12'}",
            "quarkus.http.ssl.certificate.key-store-file-type=PKCS12",
            f"quarkus.http.ssl.certificate.key-store-password={password}",
            f"quarkus.http.ssl.certificate.trust-store-file={tls / 'truststore.p12'}",
            "quarkus.http.ssl.certificate.trust-store-file-type=PKCS12",
            f"quarkus.http.ssl.certificate.trust-store-password={password}",
            "quarkus.http.ssl.client-auth=required",
            # Every certificate from the cluster's CA reads; only kraftform's registers, configures and deletes
            # (the build's permissions; `CertificateRoles.java` gives the roles by the certificate's common name).
            f"kraftform.registry.writers={CLIENT_NAME}",
            ""]), PRIVATE)

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

    def reader_certificate(self, name: str, out: Path) -> tuple[Path, Path]:
        """A client certificate from the cluster's CA for `name` (a producer, a consumer, a person), which the
        registry lets read but not write; written to `out` as NAME.pem and NAME.key (0600)."""
        if name == CLIENT_NAME:
            raise UsageError(f"{name!r} is the name of kraftform's own certificate, the one that writes; choose "
                             f"another")
        pair = issue(dep.load_secrets(self.state_dir).ca, name)
        cert, key = out / f"{name}.pem", out / f"{name}.key"
        write_atomic(cert, pair.cert_pem)
        write_atomic(key, pair.key_pem, PRIVATE)
        return cert, key

    def running(self) -> bool:
        return bool(self._pids())

    def up(self, progress: Progress, timeout: float = START_TIMEOUT_S) -> str:
        """Start the registry unless it runs; return its URL once it answers kraftform's authenticated request."""
        if self._pids():
            self._wait(timeout)
            return self.url
        jar = ensure_registry()
        self._write_files()
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
        """Until the registry answers kraftform's request; `alive`: whether the JVM runs (by default, found by its
        directory: a JVM just launched may not show its command line yet)."""
        client, log = self.client(timeout=10), self.dir / LOG_FILE
        alive = alive or self.running

        def answered() -> None:
            if not alive():
                raise ClusterUnhealthy(f"the schema registry exited: {last_error_line(tail(log))} (its log: {log})")
            try:
                client.subjects()
            except (ConnectionFailed, KafkaRequestFailed) as exc:
                raise NotYet(str(exc)) from None

        poll("the schema registry to answer", timeout, answered, interval=1.0)

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


def local_registry(state_dir: Path, spec: RegistrySpec) -> LocalRegistry:
    """The registry beside the cluster in `state_dir`; refused for a Docker-runtime cluster (not there yet)."""
    if dep.load(state_dir).runtime != "local":
        raise UsageError("the schema registry runs beside local clusters only for now (`kraftform cluster up` "
                         "without --runtime docker); point `registry.url` at a registry you run otherwise")
    return LocalRegistry(state_dir, spec)


def stop_registry(state_dir: Path) -> None:
    """The registry beside the cluster in `state_dir`, whatever the specs now declare: before the cluster goes."""
    if (state_dir / "registry").is_dir():
        LocalRegistry(state_dir, RegistrySpec()).down()


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
    registry = LocalRegistry(state_dir, spec)
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
    """The registry's id of the value schema an Avro consumer's topics declare (what a producer of its records
    writes into the Confluent header); None for any other consumer."""
    if consumer.value.format != "avro":
        return None
    rest = registry_client(specs, state_dir)
    subject = next(s for s in specs.subjects if s.part == "value" and s.topic in consumer.topics)
    version = rest.lookup(subject.name, subject.schema, subject.schema_type)
    if version is None:
        raise UsageError(f"subject {subject.name!r} has no version with the declared schema ({subject.file}): run "
                         f"`kraftform apply` first")
    return rest.version(subject.name, version).id
