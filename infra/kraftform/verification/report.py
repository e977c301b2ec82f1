"""The summary `kraftform verify` prints: one row per guarantee, pass or fail, and the figures behind it.

A row is a promise checked (pass/fail) or a figure measured where the profile promises nothing (the
acks=1 profiles may lose records; how many is reported, not judged). Tables of figures (profile
performance, delivery under failure) ride along for docs/benchmarks.md.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from enum import StrEnum

from kraftform.tables import text_table


class Outcome(StrEnum):
    PASS = "pass"
    FAIL = "FAIL"
    MEASURED = "measured"
    NOT_RUN = "not run"


@dataclass(frozen=True)
class Check:
    area: str
    guarantee: str
    outcome: Outcome
    measured: str
    seconds: float = 0.0


@dataclass(frozen=True)
class Table:
    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Report:
    mode: str
    target: str
    checks: tuple[Check, ...]
    tables: tuple[Table, ...] = ()
    seconds: float = 0.0
    notes: tuple[str, ...] = field(default=())

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.outcome is not Outcome.FAIL for c in self.checks)


def check(area: str, guarantee: str, ok: bool, measured: str, seconds: float = 0.0) -> Check:
    return Check(area, guarantee, Outcome.PASS if ok else Outcome.FAIL, measured, seconds)


def _markdown(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    return [line(header), "| " + " | ".join("---" for _ in header) + " |", *(line(r) for r in rows)]


def _check_rows(report: Report) -> list[tuple[str, ...]]:
    return [(c.area, c.guarantee, c.outcome.value, c.measured, f"{c.seconds:.0f} s") for c in report.checks]


CHECK_HEADER = ("area", "guarantee", "result", "measured", "time")


def render_text(report: Report) -> str:
    out = [f"kraftform verify ({report.mode}) against {report.target}", ""]
    for table in report.tables:
        out += [table.title, text_table((table.header, *table.rows)), ""]
    out += ["Summary", text_table((CHECK_HEADER, *_check_rows(report))), ""]
    out += [*report.notes]
    failed = sum(1 for c in report.checks if c.outcome is Outcome.FAIL)
    verdict = "every guarantee held" if report.passed else f"{failed} guarantee(s) FAILED"
    out.append(f"{verdict} ({len(report.checks)} checks in {report.seconds:.0f} s)")
    return "\n".join(out) + "\n"


def render_markdown(report: Report) -> str:
    out = [f"### kraftform verify ({report.mode})", ""]
    for table in report.tables:
        out += [f"**{table.title}**", "", *_markdown(table.header, table.rows), ""]
    out += ["**Summary**", "", *_markdown(CHECK_HEADER, _check_rows(report)), ""]
    out += [f"- {n}" for n in report.notes]
    return "\n".join(out) + "\n"


def render_json(report: Report) -> str:
    data = asdict(report)
    data["passed"] = report.passed
    return json.dumps(data, indent=2, default=str) + "\n"
