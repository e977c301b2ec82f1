"""Rack-aware replica placement for replication-factor changes."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kraftform.plan.placement import describe, reassign

RACKS = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}


def test_increase_keeps_replicas_and_leader_and_fills_missing_racks() -> None:
    new = reassign(((1, 2), (2, 3), (3, 1)), {1: "a", 2: "b", 3: "c"}, 3)
    assert new == ((1, 2, 3), (2, 3, 1), (3, 1, 2))


def test_increase_prefers_an_unused_rack_over_a_less_loaded_broker() -> None:
    new = reassign(((1, 4),), RACKS, 3)  # 1 and 4 share rack a
    assert new[0][:2] == (1, 4) and RACKS[new[0][2]] in {"b", "c"}


def test_decrease_drops_a_duplicate_rack_first_and_never_the_leader() -> None:
    new = reassign(((4, 1, 2),), RACKS, 2)  # 4 and 1 both on rack a
    assert new == ((4, 2),)


def test_new_replicas_spread_over_brokers() -> None:
    new = reassign(tuple((b,) for b in (1, 2, 3, 4, 5, 6)), RACKS, 2)
    assert sorted(Counter(r[1] for r in new).values()) == [1] * 6


def test_more_replicas_than_brokers_is_an_error() -> None:
    with pytest.raises(ValueError, match="replication factor 4 needs 4 brokers; the cluster has 3"):
        reassign(((1, 2, 3),), {1: None, 2: None, 3: None}, 4)


def test_describe_is_short() -> None:
    assert describe(((1, 2), (2, 3))) == "1,2 | 2,3"
    assert describe(tuple((1,) for _ in range(8))).endswith("... (8 partitions)")


@given(st.lists(st.permutations([1, 2, 3, 4, 5, 6]).map(lambda p: tuple(p[:2])), min_size=1, max_size=12),
       st.integers(min_value=1, max_value=3))
def test_any_change_gives_distinct_racks_and_keeps_leaders(assignment: list[tuple[int, ...]], rf: int) -> None:
    new = reassign(assignment, RACKS, rf)
    for before, after in zip(assignment, new, strict=True):
        assert len(after) == rf and len(set(after)) == rf
        assert after[0] == before[0]
        if rf >= len(before):
            assert after[:len(before)] == before
        if len({RACKS[b] for b in before}) == len(before):  # existing replicas never move, so only then
            assert len({RACKS[b] for b in after}) == rf
