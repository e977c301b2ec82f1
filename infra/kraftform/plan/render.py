"""Renderings of a Plan: text for terminals, markdown for pull-request comments, JSON for machines.

All three show the same changes in the same order; markdown puts destructive and disruptive changes first
because that is what a reviewer must not miss.
"""

from __future__ import annotations

import json

from kraftform.plan.changes import Action, Change, Plan, Safety

SYMBOL = {Action.CREATE: "+", Action.UPDATE: "~", Action.DELETE: "-", Action.REFUSE: "!"}


def listed(items: list[str], limit: int = 10, sep: str = ", ") -> str:
    """The first `limit` items and how many more: a message stays one readable line at any scale."""
    return sep.join(items[:limit]) + (f" and {len(items) - limit} more" if len(items) > limit else "")


def summary(plan: Plan) -> str:
    if plan.empty:
        return "No changes."
    counts = plan.counts()
    parts = ", ".join(f"{counts[s]} {s}" for s in Safety if counts[s])
    refused = f"; {len(plan.refused)} refused" if plan.refused else ""
    return f"{len(plan.changes)} change{'s' if len(plan.changes) != 1 else ''} ({parts}{refused})"


def _what(c: Change) -> str:
    key = f" {c.key}" if c.key else ""
    if c.current is not None and c.desired is not None:
        values = f": {c.current} -> {c.desired}"
    elif c.desired is not None:
        values = f": {c.desired}"
    elif c.current is not None:
        values = f": was {c.current}"
    else:
        values = ""
    return f"{c.action} {c.kind} {c.resource}{key}{values}"


def render_text(plan: Plan) -> str:
    lines = [f"{plan.subject.capitalize()}: {summary(plan)}"]
    for c in sorted(plan.changes, key=lambda c: c.safety.rank):
        lines.append(f"  {SYMBOL[c.action]} [{c.safety}] {_what(c)}")
        lines.append(f"      {c.reason}")
    lines += [f"  note: {note}" for note in plan.notes]
    lines += [f"  problem: {problem}" for problem in plan.problems]
    return "\n".join(lines) + "\n"


def _cell(value: str | None) -> str:
    return "" if value is None else value.replace("|", "\\|").replace("\n", " ")


def render_markdown(plan: Plan) -> str:
    out = [f"## kraftform {plan.subject}", "", f"**{summary(plan)}**", ""]
    headings = {Safety.DESTRUCTIVE: "### :boom: Destructive (data or access is lost)",
                Safety.DISRUPTIVE: "### :warning: Disruptive (clients will notice)",
                Safety.SAFE: "### Safe"}
    for safety in Safety:
        changes = plan.by_safety(safety)
        if not changes:
            continue
        out += [headings[safety], "", "| | Action | Kind | Resource | Key | Current | Desired | Why |",
                "|---|---|---|---|---|---|---|---|"]
        out += [f"| {SYMBOL[c.action]} | {c.action} | {c.kind} | `{_cell(c.resource)}` | {_cell(c.key)} | "
                f"{_cell(c.current)} | {_cell(c.desired)} | {_cell(c.reason)} |" for c in changes]
        out.append("")
    if plan.refused:
        out += ["> **Refused changes** cannot be applied as written; see their reasons above.", ""]
    if plan.problems:
        out += ["### :x: Problems (apply would stop)", "", *[f"- {_cell(p)}" for p in plan.problems], ""]
    if plan.notes:
        out += ["<details><summary>Notes</summary>", "", *[f"- {_cell(n)}" for n in plan.notes], "", "</details>", ""]
    return "\n".join(out)


def render_json(plan: Plan) -> str:
    return json.dumps(plan.to_dict(), indent=2, sort_keys=True) + "\n"


RENDERERS = {"text": render_text, "markdown": render_markdown, "json": render_json}
