"""`kraftform verify --quick` against the test run's local cluster, as CI's README command runs it.

Its checks kill a partition leader and the active controller of the shared cluster and restart them; the
last assertion is that the cluster is healthy again for the tests after this one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from ....conftest import EXAMPLE_SPECS
from ...conftest import LiveCluster

pytestmark = pytest.mark.integration


def test_verify_quick_passes_and_leaves_the_cluster_healthy(local_cluster: LiveCluster, tmp_path: Path) -> None:
    work = tmp_path / "work"
    done = subprocess.run([sys.executable, "-m", "kraftform", "verify", str(EXAMPLE_SPECS), "--quick",
                           "--state-dir", str(local_cluster.state_dir), "--work-dir", str(work), "--format", "json"],
                          capture_output=True, text=True, timeout=1500, check=False)
    print(done.stderr)
    report = json.loads(done.stdout)
    rows = {(c["area"], c["guarantee"]): c for c in report["checks"]}
    failed = [f"{c['area']}: {c['guarantee']}: {c['measured']}" for c in report["checks"] if c["outcome"] == "FAIL"]
    assert done.returncode == 0 and report["passed"], "\n".join(failed)
    outcomes = {area: c["outcome"] for (area, _g), c in rows.items()}
    assert outcomes["delivery (durability)"] == "pass"
    assert outcomes["delivery (throughput)"] == outcomes["delivery (latency)"] == "measured"
    assert outcomes["controller failover"] == "pass" and outcomes["secrets"] == "pass"
    titles = {t["title"].split(" (")[0] for t in report["tables"]}
    assert {"Delivery under failure", "Profiles side by side"} <= titles
    trials = next(t for t in report["tables"] if t["title"].startswith("Applies SIGKILLed"))
    assert len(trials["rows"]) >= 20 and all(row[3] == "yes" for row in trials["rows"])
    # The tools' own output is there to read, and nothing of this run is left on the cluster.
    assert (work / "logs" / "durability-durability-producer.stdout").stat().st_size > 1_000_000
    assert not (work / "configs").exists()
    status = subprocess.run([sys.executable, "-m", "kraftform", "cluster", "status", "--state-dir",
                             str(local_cluster.state_dir)], capture_output=True, text=True, timeout=120, check=False)
    assert status.returncode == 0, status.stdout + status.stderr
    names = AdminClient(local_cluster.admin).list_topics(timeout=30).topics
    assert not [n for n in names if n.startswith(("kraftform.verify.", "verify-"))]
