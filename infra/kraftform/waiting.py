"""One way to wait: a stated deadline, a pause between attempts, and a message that says what was waited for.

Every wait for the cluster, a container, a process or a Spark query goes through `poll`, so give-up rules
and messages are the same everywhere: "<what>: not done after 30 s (last: 2 of 3 brokers registered)".
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from kraftform.errors import ClusterUnhealthy, KraftformError

T = TypeVar("T")


class NotYet(Exception):
    """Raised by an attempt that is not done; its text is the progress the timeout message reports."""


def poll(what: str, timeout: float, attempt: Callable[[], T], *, interval: float = 0.5,
         retry_on: tuple[type[BaseException], ...] = (), error: type[KraftformError] = ClusterUnhealthy) -> T:
    """Call `attempt` until it returns instead of raising NotYet (or one of `retry_on`: a transient
    failure); after `timeout` seconds raise `error` naming `what` and the last state seen. At least one
    attempt is always made."""
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    while True:
        try:
            return attempt()
        except NotYet as exc:
            last = str(exc) or last
        except retry_on as exc:
            last = str(exc) or type(exc).__name__
        if time.monotonic() >= deadline:
            raise error(f"{what}: not done after {timeout:.0f} s (last: {last})")
        time.sleep(interval)


def until(what: str, timeout: float, done: Callable[[], bool], *, interval: float = 0.5,
          error: type[KraftformError] = ClusterUnhealthy) -> None:
    """`poll` for a condition that has nothing to report but done or not."""

    def attempt() -> None:
        if not done():
            raise NotYet()

    poll(what, timeout, attempt, interval=interval, error=error)
