"""Every program kraftform runs to its end has a deadline, and an expired one is said in kraftform's words."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from kraftform.errors import EnvironmentMissing
from kraftform.subprocesses import run_to_end

PACKAGE = Path(__file__).resolve().parents[2] / "infra" / "kraftform"
ENDLESS = ("run", "check_output", "check_call", "call")


def _unbounded() -> list[str]:
    """Calls that wait for a program with no deadline: subprocess.run and its kin, and a Popen's wait or
    communicate, without `timeout`."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                continue
            called = ast.unparse(node.func)
            waits = node.func.attr in ("wait", "communicate") and "proc" in ast.unparse(node.func.value).lower()
            bounded = any(k.arg == "timeout" for k in node.keywords) or (waits and bool(node.args))
            if ((called.startswith("subprocess.") and node.func.attr in ENDLESS) or waits) and not bounded:
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {called}")
    return found


def test_every_wait_for_a_program_has_a_deadline() -> None:
    assert _unbounded() == []


def test_the_scan_finds_an_unbounded_wait(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "bad.py").write_text("import subprocess\nsubprocess.run(['true'])\nproc.wait()\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path)
    assert _unbounded() == ["bad.py:2: subprocess.run", "bad.py:3: proc.wait"]


def test_an_expired_deadline_names_the_program_and_its_last_output() -> None:
    with pytest.raises(EnvironmentMissing) as caught:
        run_to_end([sys.executable, "-c", "import sys, time; print('resolving', file=sys.stderr, flush=True); "
                    "time.sleep(30)"], "Maven fetching Kafka", 1, EnvironmentMissing)
    assert "Maven fetching Kafka did not finish within 1 s" in str(caught.value)
    assert "resolving" in str(caught.value)
