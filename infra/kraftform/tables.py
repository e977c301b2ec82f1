"""Plain-text tables for terminals: a header, a rule, left-aligned columns; one helper for every command that
prints one (`kraftform size`, `kraftform verify`)."""

from __future__ import annotations

from collections.abc import Sequence


def text_table(rows: Sequence[Sequence[str]]) -> str:
    """`rows[0]` is the header; a dashed rule goes under it."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
