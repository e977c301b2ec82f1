"""Programs kraftform runs to their end (Maven, debootstrap, pip, Kafka's tools): each with a deadline, and an
expired deadline said in kraftform's words, naming the program and the end of what it printed."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from typing import Any

from kraftform.errors import KraftformError


def run_to_end(command: Sequence[str], what: str, timeout: float, error: type[KraftformError],
               **options: Any) -> subprocess.CompletedProcess[str]:
    """`command` run to its end with its output captured as text; `error` when it is still running after
    `timeout` seconds (it is killed then). A non-zero exit is the caller's to judge."""
    try:
        return subprocess.run(list(command), capture_output=True, text=True, timeout=timeout, check=False,
                              **options)
    except subprocess.TimeoutExpired as exc:
        printed = b"" if exc.stderr is None else exc.stderr
        tail = (printed.decode(errors="replace") if isinstance(printed, bytes) else printed)[-1500:]
        raise error(f"{what} did not finish within {timeout:.0f} s and was stopped"
                    + (f"; its last output:\n{tail}" if tail.strip() else "")) from None
