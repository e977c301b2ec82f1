"""Kill points placed by an apply's own progress, never by a clock.

verify's killed applies once slept a share of a first apply's duration before their SIGKILL; on a cold, busy
machine that first apply was slow, the later ones fast, and half of them finished before their kill (a fresh
clone's `verify --quick` went red with 12 of 12 trials converged). Here a trial names the progress line it is
killed after (the n-th that the apply prints) and a share of the apply's own pace since it started; the kill
lands then, or at the next progress line if that comes first. How fast the machine runs moves when the kill
lands, never whether it lands inside the apply.
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

#: A trial whose apply ended before its kill: it does not count as a killed apply.
FINISHED = "finished before the kill"
#: An apply printing nothing for this long is killed where it is (a hung apply is the check's finding, not a
#: reason for verify to hang with it).
SILENCE_S = 1800.0


@dataclass(frozen=True)
class KillPoint:
    """Kill after the apply's progress event number `event` (0 is its first), `share` of its mean gap between
    events later, or at its next event if that comes first."""

    event: int
    share: float = 0.0


@dataclass(frozen=True)
class Killed:
    #: The last progress line the apply printed before its kill (FINISHED when it ended first).
    reached: str
    #: Seconds from its start to its kill (or to its end).
    after_s: float
    #: The progress lines it printed, in order.
    events: tuple[str, ...]


def kill_at(command: Sequence[str], log_path: Path, is_event: Callable[[str], bool],
            point: Callable[[Sequence[str]], KillPoint], env: Mapping[str, str] | None = None) -> Killed:
    """Run `command` (its output to `log_path`) and SIGKILL it at the point `point` names for the progress events
    seen so far (asked again at each one, so a point can depend on what the apply announced, such as its number of
    steps). Python's output is unbuffered in the child, so a line is seen when it is printed."""
    lines: queue.Queue[str | None] = queue.Queue()
    began = time.monotonic()
    with open(log_path, "w") as log:
        process = subprocess.Popen(list(command), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                   env={**(env if env is not None else os.environ), "PYTHONUNBUFFERED": "1"})

        def read() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                log.write(line)
                log.flush()
                lines.put(line.rstrip("\n"))
            lines.put(None)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        events: list[str] = []
        deadline: float | None = None
        try:
            while True:
                wait = SILENCE_S if deadline is None else max(0.0, deadline - time.monotonic())
                try:
                    line = lines.get(timeout=wait)
                except queue.Empty:
                    break  # the share of a gap has passed, or the apply fell silent
                if line is None:
                    process.wait(timeout=60)
                    return Killed(FINISHED, time.monotonic() - began, tuple(events))
                if not is_event(line):
                    continue
                events.append(line.strip())
                if deadline is not None:
                    break  # the next event came before the share of a gap had passed
                chosen = point(events)
                if len(events) - 1 >= chosen.event:
                    if chosen.share <= 0:
                        break
                    deadline = time.monotonic() + chosen.share * (time.monotonic() - began) / len(events)
            after = time.monotonic() - began
            os.kill(process.pid, signal.SIGKILL)
        finally:
            if process.poll() is None:
                process.kill()
            process.wait(timeout=30)
            reader.join(timeout=30)
    return Killed(events[-1] if events else "before its first step", after, tuple(events))


def stratified(trial: int, count: int, draw: float) -> float:
    """Where in an apply trial `trial` (from 1) of `count` is killed, in [0, 1): a random point (`draw`) of the
    trial's own slice of the apply, so a few trials still reach its start, its middle and its end; past `count`,
    anywhere."""
    return (trial - 1 + draw) / count if trial <= count else draw
