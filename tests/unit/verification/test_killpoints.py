"""Kills placed by an apply's progress land inside it whatever the machine's pace: a stand-in apply (a Python child
printing the lines `kraftform apply` prints) is run at two paces, and each kill lands at the same line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kraftform.verification.killpoints import FINISHED, KillPoint, kill_at, stratified
from kraftform.verification.nodework import node_point
from kraftform.verification.resilience import PROGRESS, apply_point

STEPS = ("user", "acl", "quota", "topic")


def _apply(pause_s: float, steps: tuple[str, ...] = STEPS) -> list[str]:
    """A child printing an apply's progress (plan lines on stdout, progress on stderr), `pause_s` between lines."""
    lines = ["  + [safe] create topic t: 1 partitions, RF 3", "observed 3 topics, 0 ACL bindings"]
    for number, kind in enumerate(steps, 1):
        lines += [f"[{number}/{len(steps)}] {kind}: 2 change(s) ...", f"[{number}/{len(steps)}] {kind}: done in 0.1 s"]
    lines.append("Applied 8 changes; the cluster now matches the specs.")
    script = ("import sys, time\n"
              f"for line in {lines!r}:\n"
              "    print(line, file=sys.stderr if line[0] in '[o' else sys.stdout)\n"
              f"    time.sleep({pause_s})\n")
    return [sys.executable, "-c", script]


@pytest.mark.parametrize("pause_s", [0.1, 0.3])
@pytest.mark.parametrize(("where", "reached"), [
    (0.0, "observed 3 topics, 0 ACL bindings"),
    (0.35, "[2/4] acl: 2 change(s) ..."),
    (0.99, "[4/4] topic: done in 0.1 s"),
])
def test_a_kill_lands_at_the_same_line_at_any_pace(tmp_path: Path, pause_s: float, where: float,
                                                    reached: str) -> None:
    killed = kill_at(_apply(pause_s), tmp_path / "apply.log", lambda line: bool(PROGRESS.match(line)),
                     apply_point(where, 0.0, steps_before=2))
    assert killed.reached == reached
    assert "Applied" not in (tmp_path / "apply.log").read_text()


def test_a_share_of_the_gap_is_capped_by_the_next_line(tmp_path: Path) -> None:
    """A kill waiting out a share of the apply's pace still lands no later than the next progress line."""
    killed = kill_at(_apply(0.2), tmp_path / "apply.log", lambda line: bool(PROGRESS.match(line)),
                     lambda events: KillPoint(1, share=50.0))
    assert killed.reached == "[1/4] user: done in 0.1 s"
    assert killed.after_s < 5


def test_an_apply_with_less_to_do_than_the_point_finishes_and_says_so(tmp_path: Path) -> None:
    killed = kill_at(_apply(0.0, ()), tmp_path / "apply.log", lambda line: bool(PROGRESS.match(line)),
                     lambda events: KillPoint(5))
    assert killed.reached == FINISHED
    assert killed.events == ("observed 3 topics, 0 ACL bindings",
                             "Applied 8 changes; the cluster now matches the specs.")


def test_the_assumed_step_count_gives_way_to_the_announced_one() -> None:
    point = apply_point(0.99, 0.5, steps_before=1)
    assert point(["observed"]) == KillPoint(2, 0.0)  # one step assumed: its end is the last point
    assert point(["observed", "[1/4] user: 2 change(s) ..."]) == KillPoint(8, 0.0)


def test_a_roll_is_placed_by_its_announced_nodes_and_other_work_by_what_it_printed_before() -> None:
    point = node_point(0.5, 0.3, expected=4)
    assert point(["adding b4 (broker 4) ..."]) == KillPoint(2, 0.3)
    assert point(["[1/3] b1: waiting until it may stop ..."]) == KillPoint(4, 0.3)
    assert node_point(0.99, 0.3, expected=4)([]) == KillPoint(3, 0.0)


def test_kill_points_are_stratified_over_the_trials() -> None:
    assert [stratified(k, 4, 0.5) for k in range(1, 5)] == [0.125, 0.375, 0.625, 0.875]
    assert stratified(5, 4, 0.3) == 0.3
