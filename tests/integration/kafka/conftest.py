"""Spec directories for reconcile tests: the test cluster's spec plus whatever a test declares.

Every test works under its own topic prefix and principals, so tests share one cluster without seeing
each other's resources (each spec's managed scope is its own prefix and its declared principals).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from kraftform.cluster.connection import Connection, read_connection
from kraftform.declared import load_specs
from kraftform.kafka.apply import ApplyOptions
from kraftform.kafka.observe import observe
from kraftform.kafka.reconcile import LivePlan, apply_cluster, plan_cluster
from kraftform.plan.state import ClusterState
from kraftform.specset.model import SpecSet
from kraftform.testing.cluster import EphemeralCluster, ephemeral_cluster

from ..conftest import CLUSTER_SPECS, LiveCluster, unique


@dataclass
class Workspace:
    """One test's spec directory against the shared cluster."""

    cluster: LiveCluster
    root: Path
    prefix: str

    @property
    def command_config(self) -> Path:
        return self.cluster.state_dir / "admin.properties"

    @property
    def connection(self) -> Connection:
        return read_connection(self.command_config)

    def name(self, suffix: str) -> str:
        return f"{self.prefix}.{suffix}"

    def write(self, scope: dict[str, Any] | None = None, security: dict[str, Any] | None = None,
              **sections: list[dict[str, Any]]) -> SpecSet:
        """Replace the spec files with these sections (topics, acls, quotas, users, principals); `scope` adds
        to the managed scope (its topic prefix is always the test's own), `security` to the cluster's."""
        cluster = yaml.safe_load((CLUSTER_SPECS / "cluster.yaml").read_text())
        cluster["cluster"].setdefault("security", {}).update(security or {})
        cluster["cluster"]["name"] = self.cluster.spec.name  # the shared cluster's own (kraftform.testing's)
        cluster["cluster"]["managed_scope"] = {"topic_prefixes": [f"{self.prefix}."], **(scope or {})}
        for path in self.root.glob("*.yaml"):
            path.unlink()
        (self.root / "cluster.yaml").write_text(yaml.safe_dump(cluster))
        for section, items in sections.items():
            (self.root / f"{section}.yaml").write_text(yaml.safe_dump({section: items}))
        return self.specs()

    def specs(self) -> SpecSet:
        return load_specs(self.root)

    def plan(self) -> LivePlan:
        return plan_cluster(self.connection, self.specs())

    def apply(self, allow_destructive: bool = False) -> LivePlan:
        specs = self.specs()
        live = plan_cluster(self.connection, specs)
        return apply_cluster(self.connection, specs, live, ApplyOptions(allow_destructive=allow_destructive),
                             progress=lambda _m: None)

    def observe(self) -> ClusterState:
        return observe(self.connection).state

    def cli(self, *argv: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        """`kraftform COMMAND SPECS --command-config ...` in a subprocess, as users run it."""
        command, *rest = argv
        args = [command, *(rest if command == "import" else [str(self.root), *rest])]
        return subprocess.run([sys.executable, "-m", "kraftform", *args, "--command-config",
                               str(self.command_config)], capture_output=True, text=True, check=False,
                              timeout=timeout)


@pytest.fixture
def workspace(local_cluster: LiveCluster, tmp_path: Path) -> Workspace:
    root = tmp_path / "specs"
    root.mkdir()
    return Workspace(local_cluster, root, unique("rc"))


#: One combined node, as the `fast` test topology runs it: the cluster section of the specs a test on one plans.
ONE_NODE: dict[str, Any] = {
    "name": "kfonenode", "mode": "combined", "brokers": 1, "controllers": 1,
    "defaults": {"replication_factor": 1, "min_insync_replicas": 1},
    "security": {"sasl_mechanism": "SCRAM-SHA-512", "controller_auth": "mtls"},
}


@dataclass
class OneNode:
    """A one-node cluster of a test module's own (started through `kraftform.testing`, as a user's suite starts
    one) and the specs directory a test rewrites and runs `kraftform` commands with."""

    specs: Path
    cluster: EphemeralCluster | None = None

    def declare(self, cluster: dict[str, Any] | None = None, **sections: Any) -> None:
        (self.specs / "cluster.yaml").write_text(yaml.safe_dump({"cluster": {**ONE_NODE, **(cluster or {})},
                                                                 **sections}))

    @property
    def running(self) -> EphemeralCluster:
        assert self.cluster is not None
        return self.cluster

    def kraftform(self, *args: str) -> subprocess.CompletedProcess[str]:
        """`kraftform COMMAND SPECS --command-config admin.properties`, as a user runs it."""
        return subprocess.run([sys.executable, "-m", "kraftform", *args, str(self.specs), "--command-config",
                               str(self.running.properties())], capture_output=True, text=True, timeout=120,
                              check=False)


@contextlib.contextmanager
def one_node(specs: Path, cluster: dict[str, Any] | None = None, **sections: Any) -> Iterator[OneNode]:
    """A one-node test cluster started from ONE_NODE with `cluster` over it and `sections` beside it."""
    made = OneNode(specs)
    made.declare(cluster, **sections)
    with ephemeral_cluster(specs, "fast") as started:
        made.cluster = started
        yield made
