"""The specs' Kafka Connect clusters run against a test cluster (the `kafka_connect` fixture): workers started as
`kraftform connect up` starts them, connectors planned (validated by their own plugins), applied, and running as
declared before the first test gets them."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

from kraftform.connect.rest import ConnectRest
from kraftform.errors import PlanRefusedError, UsageError
from kraftform.plan.connectors import LiveConnector
from kraftform.testing.cluster import EphemeralCluster


@dataclass(frozen=True)
class KafkaConnect:
    """The test cluster's Connect clusters: each one's REST client (kraftform's own login, TLS verified)."""

    clusters: dict[str, ConnectRest]

    def rest(self, cluster: str | None = None) -> ConnectRest:
        """The REST client of `cluster` (default: the only one declared)."""
        if cluster is None:
            if len(self.clusters) != 1:
                raise UsageError(f"the specs declare {len(self.clusters)} Connect clusters: name one "
                                 f"({', '.join(self.clusters)})")
            return next(iter(self.clusters.values()))
        return self.clusters[cluster]

    def connector(self, name: str, cluster: str | None = None) -> LiveConnector:
        """A connector's config and its and its tasks' states, as the workers report them now."""
        return self.rest(cluster).connectors()[name]

    def offsets(self, name: str, cluster: str | None = None) -> dict[str, str]:
        """A connector's offsets by partition, as canonical JSON (a sink's: `{"kafka_offset": N}`)."""
        return self.rest(cluster).offsets(name)


@contextlib.contextmanager
def running_connect(cluster: EphemeralCluster) -> Iterator[KafkaConnect]:
    """Every Connect cluster the specs declare, with its connectors as declared; workers stopped on exit."""
    from kraftform.connect.reconcile import apply_connect, plan_connect
    from kraftform.kafka.observe import acl_bindings
    from kraftform.runtime.connect.clusters import connect_workers, start_declared
    from kraftform.runtime.connect.jvm_workers import ConnectWorkers

    if not cluster.specs.connect:
        raise UsageError("the specs declare no Connect cluster (a `connect:` section)")
    env = {**os.environ, **cluster.env()}
    granted = acl_bindings(cluster.admin)
    started: list[ConnectWorkers] = []
    try:
        clients = {}
        for spec in cluster.specs.connect:
            started.append(connect_workers(cluster.state_dir, spec))
            start_declared(cluster.state_dir, cluster.specs, spec, env, lambda _line: None)
            rest = started[-1].rest()
            plan = plan_connect(rest, spec, granted, started[-1].logins(cluster.passwords))
            if plan.problems:
                raise PlanRefusedError("the connectors' plan has problems:\n" + "\n".join(plan.problems))
            started[-1].write_logins(cluster.passwords)
            apply_connect(rest, spec, plan, lambda _line: None)
            started[-1].mark_logins_applied()
            clients[spec.name] = rest
        yield KafkaConnect(clients)
    finally:
        for workers in started:
            workers.down(purge=True)
