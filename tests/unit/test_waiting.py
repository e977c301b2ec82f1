"""The one wait helper: what it returns, what it says when it gives up, and what it lets through."""

from __future__ import annotations

import pytest

from kraftform.errors import ClusterUnhealthy, ConnectionFailed
from kraftform.waiting import NotYet, poll, until


def test_poll_returns_the_first_answer_and_retries_what_it_is_told_to() -> None:
    calls: list[int] = []

    def attempt() -> str:
        calls.append(1)
        if len(calls) == 1:
            raise TimeoutError("busy")
        if len(calls) == 2:
            raise NotYet("1 of 3 brokers")
        return "ready"

    assert poll("brokers", 5, attempt, interval=0.01, retry_on=(TimeoutError,)) == "ready"
    assert len(calls) == 3


def test_a_timeout_names_what_was_waited_for_and_the_last_state_seen() -> None:
    def attempt() -> None:
        raise NotYet("2 of 3 brokers registered")

    with pytest.raises(ConnectionFailed, match=r"the cluster: not done after 0 s \(last: 2 of 3 brokers registered\)"):
        poll("the cluster", 0, attempt, error=ConnectionFailed)
    with pytest.raises(ClusterUnhealthy, match="a flag"):
        until("a flag", 0.05, lambda: False, interval=0.01)


def test_errors_it_was_not_told_to_retry_end_the_wait_at_once() -> None:
    calls: list[int] = []

    def attempt() -> None:
        calls.append(1)
        raise ValueError("a bug, not a wait")

    with pytest.raises(ValueError):
        poll("x", 30, attempt, interval=0.01)
    assert calls == [1]
