from __future__ import annotations

from pathlib import Path

import pytest

from kraftform.errors import UsageError
from kraftform.verification import SECTIONS
from kraftform.verification.report import Outcome
from kraftform.verification.run import FULL, QUICK, Options, Verification, verify

from ...conftest import EXAMPLE_SPECS


def test_a_skipped_section_runs_nothing_and_says_not_run_never_pass() -> None:
    said: list[str] = []
    run = Verification(Options(EXAMPLE_SPECS, QUICK, skip=frozenset({"performance"})), said.append)

    def must_not_run() -> None:
        raise AssertionError("a skipped section ran")

    run.timed("performance", "profile performance", must_not_run)
    ran: list[str] = []
    run.timed("resilience", "resilience", lambda: ran.append("resilience"))
    assert ran == ["resilience"]
    [row] = run.checks
    assert row.area == "profile performance" and row.outcome is Outcome.NOT_RUN
    assert "--skip performance" in row.measured and "`kraftform verify` without it" in row.measured
    assert "== profile performance: skipped (--skip performance)" in said


def test_an_unknown_section_is_refused_before_any_cluster_starts(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="--skip speed: no such section"):
        verify(Options(EXAMPLE_SPECS, QUICK, work_dir=tmp_path, skip=frozenset({"speed"})), print, str)
    assert not (tmp_path / "cluster").exists()
    assert SECTIONS == ("performance", "delivery", "resilience", "node-work")


def test_node_trials_on_a_cluster_verify_did_not_start_are_refused_before_anything_runs(tmp_path: Path) -> None:
    # They end by applying the specs' cluster section with --allow-destructive: on another cluster, its nodes go.
    state = tmp_path / "someone-elses"
    with pytest.raises(UsageError, match="--skip node-work"):
        verify(Options(EXAMPLE_SPECS, FULL, work_dir=tmp_path / "work", state_dir=state), print, str)
    assert not (tmp_path / "work").exists()
