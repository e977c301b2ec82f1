from __future__ import annotations

import pytest

from kraftform.verification.resilience import PROGRESS, stage


@pytest.mark.parametrize(("line", "expected"), [
    ("[3/5] quota: 11 change(s) ...", "in the quota step"),
    ("[5/5] topic_config: done in 0.1 s", "after the topic_config step"),
    ("waiting up to 17 s for the brokers to report 73 applied change(s) ...",
     "waiting for the brokers to show the changes"),
    ("observed 22 topics, 0 ACL bindings with 8 Admin requests in 0.2 s", "after observing, before the first step"),
    ("Applied 170 changes (100 destructive, 69 safe); the cluster now matches the specs.",
     "after the last line (done)"),
    ("before its first step", "before its first step"),
])
def test_a_kill_is_placed_by_the_last_progress_line(line: str, expected: str) -> None:
    assert stage(line) == expected


def test_plan_lines_are_not_progress() -> None:
    assert not PROGRESS.match("  + [safe] create topic verify-x.t004: 2 partitions, RF 3")
    assert PROGRESS.match("[1/5] user: 2 change(s) ...")
