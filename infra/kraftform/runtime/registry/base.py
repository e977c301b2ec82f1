"""What the schema registry kraftform runs is made of, whichever runtime runs it (`registry`: a JVM beside a local
cluster; `registry_container`: a container beside a Docker one): its TLS material, its configuration, its clients'
certificates, and the wait for it to answer.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable
from pathlib import Path

from kraftform.cluster.certificates import KeyPair, issue, pkcs12_keystore, pkcs12_truststore
from kraftform.errors import ClusterUnhealthy, ConnectionFailed, KafkaRequestFailed, UsageError
from kraftform.registry.rest import RegistryRest
from kraftform.runtime.nodes import deployment as dep
from kraftform.specset.model import RegistrySpec
from kraftform.statefiles import PRIVATE, read_json, write_atomic
from kraftform.waiting import NotYet, poll

#: The API kraftform speaks, Confluent's, under Apicurio's root.
CCOMPAT_PATH = "/apis/ccompat/v6"
#: The registry's first start prepares its database: 6-15 s here; a loaded machine takes longer.
START_TIMEOUT_S = 120.0
SECRETS_FILE = "secrets.json"
#: The common name of kraftform's client certificate: what the registry knows kraftform by.
CLIENT_NAME = "kraftform"

Progress = Callable[[str], None]



class KraftformRegistry:
    """The registry kraftform runs, whichever runtime runs it (a JVM beside a local cluster, a container beside a
    Docker one): its TLS material (made once: a restart keeps the certificates clients may have pinned), its
    configuration (written each start: the port or heap may have changed), its clients' certificates, and how it
    is started and stopped (the runtime's). `host` is the address clients reach it at."""

    def __init__(self, state_dir: Path, spec: RegistrySpec, host: str, ca: KeyPair | None = None) -> None:
        self.state_dir = state_dir.resolve()
        self.spec = spec
        self.dir = self.state_dir / "registry"
        self.host = host
        #: The CA its certificates come from: the state directory's cluster CA unless given (a stack's, whose
        #: state is Pulumi's).
        self._ca_pair = ca

    def _ca(self) -> KeyPair:
        return self._ca_pair if self._ca_pair is not None else dep.load_secrets(self.state_dir).ca

    @property
    def url(self) -> str:
        return f"https://{self.host}:{self.spec.port}{CCOMPAT_PATH}"

    def client(self, timeout: float = 30.0) -> RegistryRest:
        """kraftform's client: the cluster's CA verifies the registry, kraftform's certificate identifies it."""
        return RegistryRest(self.url, str(self.state_dir / "ca.pem"), str(self.dir / "client.pem"),
                            str(self.dir / "client.key"), timeout=timeout)

    def _store_password(self) -> str:
        path = self.dir / SECRETS_FILE
        if path.is_file():
            return str(read_json(path, "the registry's key store password")["store_password"])
        made = secrets.token_urlsafe(24)
        write_atomic(path, json.dumps({"store_password": made}), PRIVATE)
        return made

    def write_files(self, names: list[str], bind: str, tls_dir: str) -> None:
        """The TLS material for a certificate naming `names` (DNS names and addresses), and the configuration of a
        registry that binds `bind` and finds its stores in `tls_dir` (the path its process sees)."""
        self.dir.mkdir(parents=True, exist_ok=True)
        self.dir.chmod(0o700)
        password = self._store_password()
        tls = self.dir / "tls"
        if not (tls / "keystore.p12").is_file():
            ca = self._ca()
            server = issue(ca, f"registry {self.host}", names)
            client = issue(ca, CLIENT_NAME)
            write_atomic(tls / "truststore.p12", pkcs12_truststore(ca.cert_pem, password))
            write_atomic(self.dir / "client.pem", client.cert_pem)
            write_atomic(self.dir / "client.key", client.key_pem, PRIVATE)
            write_atomic(tls / "keystore.p12", pkcs12_keystore(server, password), PRIVATE)
        write_atomic(self.dir / "config" / "application.properties", "\n".join([
            f"quarkus.http.host={bind}",
            f"quarkus.http.ssl-port={self.spec.port}",
            # Plain HTTP is not served at all; the port Quarkus would bind for it is the TLS one's neighbour.
            "quarkus.http.insecure-requests=disabled",
            f"quarkus.http.port={self.spec.port + 1}",
            f"quarkus.http.ssl.certificate.key-store-file={tls_dir}/keystore.p12",
            "quarkus.http.ssl.certificate.key-store-file-type=PKCS12",
            f"quarkus.http.ssl.certificate.key-store-password={password}",
            f"quarkus.http.ssl.certificate.trust-store-file={tls_dir}/truststore.p12",
            "quarkus.http.ssl.certificate.trust-store-file-type=PKCS12",
            f"quarkus.http.ssl.certificate.trust-store-password={password}",
            "quarkus.http.ssl.client-auth=required",
            # Every certificate from the cluster's CA reads; only kraftform's registers, configures and deletes
            # (the build's permissions; `CertificateRoles.java` gives the roles by the certificate's common name).
            f"kraftform.registry.writers={CLIENT_NAME}",
            ""]), PRIVATE)

    def reader_certificate(self, name: str, out: Path) -> tuple[Path, Path]:
        """A client certificate from the cluster's CA for `name` (a producer, a consumer, a person), which the
        registry lets read but not write; written to `out` as NAME.pem and NAME.key (0600)."""
        if name == CLIENT_NAME:
            raise UsageError(f"{name!r} is the name of kraftform's own certificate, the one that writes; choose "
                             f"another")
        pair = issue(self._ca(), name)
        cert, key = out / f"{name}.pem", out / f"{name}.key"
        write_atomic(cert, pair.cert_pem)
        write_atomic(key, pair.key_pem, PRIVATE)
        return cert, key

    def running(self) -> bool:
        raise NotImplementedError

    def up(self, progress: Progress, timeout: float = START_TIMEOUT_S) -> str:
        raise NotImplementedError

    def down(self, purge: bool = False) -> None:
        raise NotImplementedError

    def wait_answered(self, timeout: float, failed: Callable[[], str | None]) -> None:
        """Until the registry answers kraftform's request; `failed()` says why it never will (its process gone)."""
        client = self.client(timeout=10)

        def answered() -> None:
            why = failed()
            if why is not None:
                raise ClusterUnhealthy(why)
            try:
                client.subjects()
            except (ConnectionFailed, KafkaRequestFailed) as exc:
                raise NotYet(str(exc)) from None

        poll("the schema registry to answer", timeout, answered, interval=1.0)
