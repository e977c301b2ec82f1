"""Spec directories for reconcile tests: the test cluster's spec plus whatever a test declares.

Every test works under its own topic prefix and principals, so tests share one cluster without seeing
each other's resources (each spec's managed scope is its own prefix and its declared principals).
"""

from __future__ import annotations

import subprocess
import sys
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

    def write(self, scope: dict[str, Any] | None = None, **sections: list[dict[str, Any]]) -> SpecSet:
        """Replace the spec files with these sections (topics, acls, quotas, users, principals); `scope` adds
        to the managed scope (its topic prefix is always the test's own)."""
        cluster = yaml.safe_load((CLUSTER_SPECS / "cluster.yaml").read_text())
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
