from __future__ import annotations

import json

from kraftform.verification.report import (
    Check,
    Outcome,
    Report,
    Table,
    check,
    render_json,
    render_markdown,
    render_text,
)


def _report(*checks: Check) -> Report:
    return Report("quick", "a test cluster", checks, (Table("Speeds", ("profile", "MB/s"), (("latency", "8.9"),)),),
                  12.0)


def test_a_failed_check_fails_the_report_and_says_so() -> None:
    report = _report(check("delivery", "nothing lost", True, "0 lost"),
                     check("profiles", "3x", False, "2.1x"),
                     Check("delivery", "acks=1", Outcome.MEASURED, "3 lost"))
    assert not report.passed
    text = render_text(report)
    assert "1 guarantee(s) FAILED (3 checks in 12 s)" in text
    assert "FAIL" in text and "measured" in text and "latency  8.9" in text


def test_measured_and_not_run_rows_do_not_fail_a_report() -> None:
    report = _report(check("delivery", "nothing lost", True, "0 lost"),
                     Check("controller failover", "killed", Outcome.NOT_RUN, "the nodes are not kraftform's"))
    assert report.passed
    assert "every guarantee held" in render_text(report)
    assert "| delivery | nothing lost | pass | 0 lost | 0 s |" in render_markdown(report)
    data = json.loads(render_json(report))
    assert data["passed"] is True and data["checks"][1]["outcome"] == "not run"


def test_an_empty_report_does_not_pass() -> None:
    assert not _report().passed
