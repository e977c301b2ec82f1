"""The specs' schema registry run beside a test cluster (the `schema_registry` fixture): started as `kraftform
registry up` starts it, every declared subject registered as `kraftform apply` registers it, before the first
test gets it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kraftform.declared import consumer_gate
from kraftform.errors import ClusterUnhealthy, UsageError
from kraftform.registry.rest import RegistryRest
from kraftform.runtime.registry.base import KraftformRegistry
from kraftform.testing.cluster import EphemeralCluster


@dataclass(frozen=True)
class SchemaRegistry:
    """The test cluster's registry: kraftform's own client (which registered the subjects), and certificates that
    read for the tests' producers and consumers."""

    admin: RegistryRest
    certificates: Path
    local: KraftformRegistry

    @property
    def url(self) -> str:
        return self.admin.url

    def client_conf(self, name: str = "tests") -> dict[str, str]:
        """confluent-kafka's `SchemaRegistryClient` settings with a certificate of `name` that reads the declared
        versions (as a producer does: `auto.register.schemas` off, `use.latest.version` on) and registers none."""
        cert, key = self.certificates / f"{name}.pem", self.certificates / f"{name}.key"
        if not cert.is_file():
            self.local.reader_certificate(name, self.certificates)
        return {"url": self.url, "ssl.ca.location": str(self.admin.ca_path), "ssl.certificate.location": str(cert),
                "ssl.key.location": str(key)}


@contextlib.contextmanager
def running_registry(cluster: EphemeralCluster) -> Iterator[SchemaRegistry]:
    """The specs' registry beside `cluster`, its subjects as declared; stopped and removed on exit."""
    from kraftform.plan.live import ownership_of
    from kraftform.registry.reconcile import apply_subjects, plan_subjects
    from kraftform.runtime.registry.running import runtime_registry

    spec = cluster.specs.registry
    if spec is None:
        raise UsageError("the specs declare no schema registry (a `registry:` section)")
    if spec.external:
        raise UsageError(f"{spec.location}: the specs' registry is external (`registry.url`); a test registry runs "
                         f"beside the test cluster, and never writes to a registry a team runs")
    registry = runtime_registry(cluster.state_dir, spec)
    try:
        registry.up(lambda _line: None)
        admin = registry.client()
        owns, gate = ownership_of(cluster.specs).topic, consumer_gate(cluster.specs)
        apply_subjects(admin, plan_subjects(admin, cluster.specs.subjects, owns, gate), False, lambda _line: None)
        left = plan_subjects(admin, cluster.specs.subjects, owns, gate)
        if left:
            raise ClusterUnhealthy("the test registry differs from the specs after their subjects were applied: " +
                                   "; ".join(f"{c.action} {c.resource}: {c.reason}" for c in left))
        certificates = cluster.state_dir / "registry-clients"
        certificates.mkdir(exist_ok=True)
        yield SchemaRegistry(admin, certificates, registry)
    finally:
        registry.down(purge=True)
