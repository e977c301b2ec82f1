"""A running consumer stopped the ways it is stopped in practice: SIGTERM (`docker stop`, Kubernetes, systemd,
`timeout`) and SIGINT (Ctrl-C), sent to its main process alone (as `docker stop` sends it) or to its whole
process group (as a terminal and `timeout` do, reaching the JVM too). Each time the query stops after its
current micro-batch, then the JVM, and the run ends with exit 0 and one line: no Java or Python trace.

Each run is also the run as users make it that test_security's password check needs: a process of its own, its
driver log on stdout, its event log and checkpoint under --data-dir and every process's command line (its JVM's
included), none holding the consumer's password."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from kraftform.verification.secretscan import CommandLineSampler

from ..conftest import LiveCluster, unique
from ..kafka.conftest import Workspace
from .conftest import example_pipeline, files_holding, wait_for_line
from .test_pipelines import payments

pytestmark = pytest.mark.integration

TRACES = ("Traceback", "Exception", "Error", "\tat ")


# The two paths the code has: SIGTERM to the process group (as a terminal's or a supervisor's group stop; only
# kraftform's ignoring keeps the JVM alive under the query) and SIGINT to the main process (kraftform's handler
# must replace pyspark's, which cancels jobs mid-write). The other two pairs take the same paths; a JVM start is
# 40 s on 2 cores.
@pytest.mark.parametrize(("sig", "to_group"), [(signal.SIGTERM, True), (signal.SIGINT, False)],
                         ids=["SIGTERM-process-group", "SIGINT-main-process"])
def test_a_stop_signal_stops_the_query_then_the_jvm_with_one_line(local_cluster: LiveCluster, tmp_path: Path,
                                                                  sig: signal.Signals, to_group: bool) -> None:
    root = tmp_path / "specs"
    root.mkdir()
    pipe = example_pipeline(Workspace(local_cluster, root, unique("sig")), tmp_path, "fraud-scoring", trigger="1s")
    assert pipe.produce((pipe.inputs[0], p["payment_id"], p) for p in payments(50, seed=5)) == 50
    seen: list[str] = []
    with CommandLineSampler(0.05) as sampler:
        process = pipe.start()
        try:
            wait_for_line(process, "batch 0:", 180, seen)
            if to_group:
                os.killpg(process.pid, sig)
            else:
                process.send_signal(sig)
            rest, _ = process.communicate(timeout=120)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
    after = rest.splitlines()
    assert process.returncode == 0, "".join(seen) + rest
    assert after and after[-1].endswith("fraud-scoring: stopped (interrupted)"), rest
    assert not [line for line in after if any(t in line for t in TRACES)], rest
    assert pipe.password not in "".join(seen) + rest
    assert any("org.apache.spark.deploy.SparkSubmit" in line for line in sampler.seen), "no Spark JVM's line sampled"
    assert [line for line in sampler.seen if pipe.password in line] == [], "a command line held the password"
    assert list((pipe.data_dir / "events").iterdir()), "the run wrote no event log"
    assert list((pipe.data_dir / "checkpoints").iterdir()), "the run wrote no checkpoint"
    assert files_holding(pipe.data_dir, pipe.password) == []
