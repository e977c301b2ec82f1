"""kraftform's pytest plugin as a user meets it: the example project under tests/example_project (its own specs,
its own tests, nothing but kraftform installed) run with `pytest` alone, in processes of their own. Each run's
clusters live under a base directory of this test's own (KRAFTFORM_TEST_DIR)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kraftform.runtime.nodes.deployment import load

PROJECT = Path(__file__).resolve().parents[2] / "example_project"
#: Every test of the example project but its Spark pipeline, its Connect archive and its schema registry's refunds
#: (run once, in the last test): for the runs whose subject is the cluster's life, not what runs on it.
QUICK = ("-k", "not pipeline and not archived and not refund")


def _pytest(project: Path, base: Path, *args: str, report: Path | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, "KRAFTFORM_TEST_DIR": str(base), "PYTHONUNBUFFERED": "1"}
    if report is not None:
        env["SHOP_CLUSTER_REPORT"] = str(report)
    return subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args], cwd=project,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            start_new_session=True)


def _finish(run: subprocess.Popen[str], timeout: float = 600) -> str:
    output, _ = run.communicate(timeout=timeout)
    return output


def _kafka_processes(base: Path) -> list[str]:
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmdline = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        # Kafka's nodes and Connect's workers (`kafka_connect`).
        if str(base).encode() in cmdline and (b"kafka.Kafka" in cmdline or b"ConnectDistributed" in cmdline):
            found.append(proc.name)
    return found


def test_invalid_specs_fail_with_located_errors_before_any_process_starts(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("__pycache__"))
    topics = project / "specs" / "topics.yaml"
    topics.write_text(topics.read_text().replace("partitions: 3", "partitions: three"))
    base = tmp_path / "clusters"
    run = _pytest(project, base)
    output = _finish(run, timeout=120)
    assert run.returncode != 0
    assert "invalid specs, no cluster started" in output, output[-3000:]
    assert "topics.yaml:3:5: $.topics[0].partitions" in output, output[-3000:]  # located, as `validate` says
    assert "During handling" not in output and "Traceback" not in output, output[-3000:]
    assert not base.exists() or list(base.iterdir()) == []
    assert _kafka_processes(base) == []


def test_a_sigkilled_session_leaves_nothing_the_next_two_at_once_trip_over(tmp_path: Path) -> None:
    """A session SIGKILLed with its cluster running; then two sessions at once: the first to start a cluster sweeps
    the dead one's away (processes and directory), and each gets a cluster of its own (name, addresses, state).

    The two are also the example project as a user runs it, with `pytest` alone: the whole project (its Spark
    consumer and Connect archive included) on the `fast` cluster, and the rest on the specs' own (`faithful`: 3
    controllers, 3 brokers on racks), where the cluster's shape is the subject."""
    base = tmp_path / "clusters"
    report = tmp_path / "killed.json"
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("__pycache__"))
    (project / "tests" / "test_zz_hang.py").write_text(
        "import time\n\n\ndef test_hangs(kafka_cluster):\n    time.sleep(600)\n")
    run = _pytest(project, base, *QUICK, report=report)
    deadline = time.monotonic() + 300
    while not report.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert report.exists(), "the session never reached its cluster"
    state = Path(json.loads(report.read_text())["state"])
    left = load(state).nodes
    assert _kafka_processes(base)  # the nodes run detached: a SIGKILL of the session leaves them running
    os.kill(run.pid, signal.SIGKILL)
    run.communicate(timeout=30)
    assert state.exists() and _kafka_processes(base)

    reports = [tmp_path / "first.json", tmp_path / "second.json"]
    runs = [_pytest(PROJECT, base, "--kraftform-topology", "fast", report=reports[0]),
            _pytest(PROJECT, base, "--kraftform-topology", "faithful", *QUICK, report=reports[1])]
    outputs = [_finish(r) for r in runs]
    for again, output in zip(runs, outputs, strict=True):
        assert again.returncode == 0, output[-4000:]
        # kraftform adds nothing to a user's warnings summary (kafka-python's deprecated resource reads included).
        assert "warning" not in output.lower(), output[-4000:]
    assert "8 passed" in outputs[0] and "4 passed" in outputs[1], outputs[0][-2000:] + outputs[1][-2000:]
    first, second = (json.loads(r.read_text()) for r in reports)
    assert first["name"] != second["name"] and first["bootstrap"] != second["bootstrap"]
    assert first["state"] != second["state"] and state not in (Path(first["state"]), Path(second["state"]))
    assert not state.exists() and list(base.iterdir()) == [], [n.handle for n in left]
    assert _kafka_processes(base) == []


@pytest.fixture(autouse=True)
def _nothing_left(tmp_path: Path) -> Iterator[None]:
    """Whatever a failed test left (a hung session's cluster) is swept at its end, so the suite goes on."""
    yield
    from kraftform.testing.cluster import sweep

    for base in (tmp_path, tmp_path / "clusters"):
        if base.is_dir():
            sweep(base)
