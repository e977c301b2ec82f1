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


# --- resizing: drain and balance ------------------------------------------------------------------------


from kraftform.plan.placement import PlacementRefused, balance, drain, spread  # noqa: E402

RESIZE_RACKS = {1: "a", 2: "b", 3: "c", 4: "a"}


def _three_racks(partitions: int) -> dict[tuple[str, int], tuple[int, ...]]:
    return {("t", p): tuple((p + i) % 3 + 1 for i in range(3)) for p in range(partitions)}


def test_balance_shares_a_racks_replicas_between_its_brokers_keeping_one_replica_per_rack() -> None:
    before = _three_racks(30)
    after = balance(before, RESIZE_RACKS)
    load = Counter(b for r in after.values() for b in r)
    assert abs(load[1] - load[4]) <= 1 and load[2] == load[3] == 30
    assert all(spread(r, RESIZE_RACKS) == 3 for r in after.values())
    leaders = Counter(r[0] for r in after.values())
    assert max(leaders.values()) - min(leaders.values()) <= 1
    assert balance(after, RESIZE_RACKS) == after  # balanced stays put


def test_balance_without_racks_evens_replicas_over_every_broker() -> None:
    after = balance(_three_racks(24), dict.fromkeys([1, 2, 3, 4]))
    load = Counter(b for r in after.values() for b in r)
    assert max(load.values()) - min(load.values()) <= 1


def test_drain_moves_every_replica_off_the_leaving_broker_keeping_rack_spread() -> None:
    before = balance(_three_racks(30), RESIZE_RACKS)
    after = drain(before, RESIZE_RACKS, {4})
    assert all(4 not in r and spread(r, RESIZE_RACKS) == 3 for r in after.values())
    assert all(before[tp][0] == after[tp][0] for tp in before if before[tp][0] != 4)  # leaders stay put


def test_drain_is_refused_naming_the_topics_when_the_rest_cannot_hold_them() -> None:
    with pytest.raises(PlacementRefused, match="replication factor of t"):
        drain(_three_racks(3), {1: None, 2: None, 3: None}, {3})
    with pytest.raises(PlacementRefused, match="rack spread of t"):
        drain({("t", 0): (1, 2)}, {1: "a", 2: "b", 3: "a"}, {2})


def test_balance_gives_a_new_broker_its_share_of_every_topic_not_only_of_the_cheapest() -> None:
    before = {(t, p): tuple((p + i) % 3 + 1 for i in range(3)) for t in ("big", "small") for p in range(12)}
    after = balance(before, dict.fromkeys([1, 2, 3, 4]))
    for topic in ("big", "small"):
        load = Counter(b for tp, r in after.items() if tp[0] == topic for b in r)
        assert max(load.values()) - min(load.values()) <= 1, (topic, load)
    total = Counter(b for r in after.values() for b in r)
    assert max(total.values()) - min(total.values()) <= 1, total
