"""Rack-aware replica placement for replication-factor changes."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import example, given, settings
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

RESIZE_RACKS: dict[int, str | None] = {1: "a", 2: "b", 3: "c", 4: "a"}


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


def test_with_even_topics_a_new_broker_gets_its_share_of_every_topic_not_only_of_the_cheapest() -> None:
    before = {(t, p): tuple((p + i) % 3 + 1 for i in range(3)) for t in ("big", "small") for p in range(12)}
    after = balance(before, dict.fromkeys([1, 2, 3, 4]), even_topics=True)
    for topic in ("big", "small"):
        load = Counter(b for tp, r in after.items() if tp[0] == topic for b in r)
        assert max(load.values()) - min(load.values()) <= 1, (topic, load)
    total = Counter(b for r in after.values() for b in r)
    assert max(total.values()) - min(total.values()) <= 1, total


# --- properties of drain and balance, on layouts hypothesis draws ----------------------------------------


from kraftform.plan.placement import reassignment_batches, target_assignment  # noqa: E402


@st.composite
def layouts(draw: st.DrawFn, racked: bool, rack_rf: int = 3
            ) -> tuple[dict[tuple[str, int], tuple[int, ...]], dict[int, str | None]]:
    """A cluster of 3-9 brokers (in 3 racks of equal size, or none) and up to 6 topics of up to 12 partitions,
    each partition's replicas on distinct brokers (when racked, `rack_rf` of them in distinct racks), placed
    anywhere."""
    per_rack = draw(st.integers(1, 3))
    brokers: dict[int, str | None] = {b: ("a", "b", "c")[(b - 1) % 3] if racked else None
                                      for b in range(1, 3 * per_rack + 1)}
    layout = {}
    for t in range(draw(st.integers(1, 6))):
        rf = 3 if racked else draw(st.integers(1, min(3, len(brokers))))
        for p in range(draw(st.integers(1, 12))):
            if racked:
                replicas = tuple(draw(st.sampled_from([b for b in brokers if brokers[b] == rack]))
                                 for rack in draw(st.permutations(["a", "b", "c"]))[:rack_rf])
            else:
                replicas = tuple(draw(st.permutations(sorted(brokers)))[:rf])
            layout[(f"t{t}", p)] = replicas
    return layout, brokers


def _load(layout: dict[tuple[str, int], tuple[int, ...]], brokers: dict[int, str | None],
          topic: str | None = None) -> Counter[int]:
    return Counter({b: 0 for b in brokers} | Counter(b for tp, r in layout.items() if topic in (None, tp[0])
                                                     for b in r))


def _kept_shape(before: dict[tuple[str, int], tuple[int, ...]], after: dict[tuple[str, int], tuple[int, ...]],
                brokers: dict[int, str | None]) -> None:
    assert after.keys() == before.keys()
    for tp, replicas in after.items():
        assert len(replicas) == len(before[tp]) == len(set(replicas))
        assert spread(replicas, brokers) >= spread(before[tp], brokers)


def _leaders_even_where_the_replicas_allow(layout: dict[tuple[str, int], tuple[int, ...]],
                                           brokers: dict[int, str | None]) -> None:
    leaders = Counter({b: 0 for b in brokers} | Counter(r[0] for r in layout.values()))
    assert not [tp for tp, r in layout.items() if any(leaders[r[0]] - leaders[f] >= 2 for f in r[1:])]


@given(layouts(racked=False), st.integers(1, 3))
def test_with_even_topics_and_no_racks_every_topic_and_every_broker_ends_within_one(
        drawn: tuple[dict[tuple[str, int], tuple[int, ...]], dict[int, str | None]], added: int) -> None:
    layout, brokers = drawn
    grown = {**brokers, **{max(brokers) + i: None for i in range(1, added + 1)}}
    after = balance(layout, grown, even_topics=True)
    _kept_shape(layout, after, grown)
    for topic in {t for t, _ in layout}:
        load = _load(after, grown, topic)
        assert max(load.values()) - min(load.values()) <= 1, (topic, load)
    total = _load(after, grown)
    assert max(total.values()) - min(total.values()) <= 1, total
    _leaders_even_where_the_replicas_allow(after, grown)
    assert balance(after, grown, even_topics=True) == after  # a balanced layout moves nothing


@given(layouts(racked=True), st.integers(0, 1))
def test_with_even_topics_and_racks_each_rack_ends_within_one_and_spreads_never_narrow(
        drawn: tuple[dict[tuple[str, int], tuple[int, ...]], dict[int, str | None]], added: int) -> None:
    layout, brokers = drawn
    grown = {**brokers, **{max(brokers) + i: ("a", "b", "c")[i - 1] for i in range(1, 3 * added + 1)}}
    after = balance(layout, grown, even_topics=True)
    _kept_shape(layout, after, grown)
    assert all(spread(r, grown) == 3 for r in after.values())
    for rack in ("a", "b", "c"):
        members = [b for b in grown if grown[b] == rack]
        for topic in [None, *{t for t, _ in layout}]:
            load = _load(after, grown, topic)
            assert max(load[b] for b in members) - min(load[b] for b in members) <= 1, (rack, topic, load)
    _leaders_even_where_the_replicas_allow(after, grown)
    assert balance(after, grown, even_topics=True) == after


@given(layouts(racked=True))
def test_draining_a_rack_member_moves_only_its_replicas_off_and_keeps_one_per_rack(
        drawn: tuple[dict[tuple[str, int], tuple[int, ...]], dict[int, str | None]]) -> None:
    layout, brokers = drawn
    grown = {**brokers, **{max(brokers) + i: ("a", "b", "c")[i - 1] for i in range(1, 4)}}
    spread_out = balance(layout, grown)
    leaving = {max(grown)}
    after = drain(spread_out, grown, leaving)
    _kept_shape(spread_out, after, grown)
    for tp, replicas in after.items():
        assert not leaving & set(replicas)
        # Only the leaving broker's replica moved: as many new replicas as it held of this partition.
        assert len(set(replicas) - set(spread_out[tp])) == len(leaving & set(spread_out[tp]))
        if spread_out[tp][0] not in leaving:
            assert replicas[0] == spread_out[tp][0]  # the preferred leader stays unless it leaves
    moves = target_assignment(spread_out, grown, leaving)
    assert all(not leaving & set(r) for target in moves.targets.values() for r in target)


@given(layouts(racked=True, rack_rf=2), st.integers(0, 1))
def test_replicas_that_may_cross_racks_never_narrow_a_partitions_spread(
        drawn: tuple[dict[tuple[str, int], tuple[int, ...]], dict[int, str | None]], added: int) -> None:
    """Two replicas in three racks: moves across racks are allowed, and none may put both in one rack."""
    layout, brokers = drawn
    grown = {**brokers, **{max(brokers) + i: ("a", "b", "c")[i - 1] for i in range(1, 3 * added + 1)}}
    after = balance(layout, grown)
    _kept_shape(layout, after, grown)
    assert all(spread(r, grown) == 2 for r in after.values())
    _leaders_even_where_the_replicas_allow(after, grown)
    assert balance(after, grown) == after


def test_reassignment_batches_count_partitions_and_split_a_large_topic() -> None:
    targets = {"big": tuple((1, 2, 3) for _ in range(450)), "a": ((1, 2),) * 30, "z": ((2, 3),) * 5}
    batches = reassignment_batches(targets, 200)
    assert [sum(len(share) for _, _, share in b) for b in batches] == [200, 200, 85]
    seen = [(topic, first + i) for b in batches for topic, first, share in b for i in range(len(share))]
    assert sorted(seen) == sorted((t, p) for t, target in targets.items() for p in range(len(target)))
    assert len(seen) == len(set(seen))
    # Each share carries the targets of the partitions it names.
    for b in batches:
        for topic, first, share in b:
            assert share == targets[topic][first:first + len(share)]
    assert reassignment_batches({}, 200) == []
    assert [len(b) for b in reassignment_batches({"t": ((1,),) * 3}, 1)] == [1, 1, 1]


# --- moves near the lower bound (issue 43) ------------------------------------------------------------------


from kraftform.plan.placement import Moves, lower_bound  # noqa: E402

Layout = dict[tuple[str, int], tuple[int, ...]]


Drawn = tuple[Layout, dict[int, str | None], dict[tuple[str, int], int]]


@st.composite
def clusters(draw: st.DrawFn, kind: str) -> Drawn:
    """Brokers and a layout of topics of 1-24 partitions with sizes from empty to a gigabyte. `kind`:
    - "racked": 3 or 4 racks given to 3-12 brokers in turn (as `cluster.racks` does, so a rack may hold a
      broker more than another), every partition with a replica in each rack, as Kafka's rack-aware
      assignment places a replication factor equal to the racks' number;
    - "mixed": the same racks, replication factors 1 to the racks' number, each partition's replicas in
      distinct racks;
    - "none": no racks, replication factors 1-3, replicas on any distinct brokers."""
    racks = ("a", "b", "c", "d")[:draw(st.sampled_from([3, 4]))] if kind != "none" else ()
    count = draw(st.integers(max(3, len(racks)), 3 * max(3, len(racks))))
    brokers: dict[int, str | None] = {b: racks[(b - 1) % len(racks)] if racks else None
                                      for b in range(1, count + 1)}
    layout: Layout = {}
    sizes: dict[tuple[str, int], int] = {}
    for t in range(draw(st.integers(1, 8))):
        rf = len(racks) if kind == "racked" else draw(st.integers(1, len(racks) or 3))
        for p in range(draw(st.integers(1, 24))):
            if racks:
                replicas = tuple(draw(st.sampled_from([b for b in brokers if brokers[b] == r]))
                                 for r in draw(st.permutations(racks))[:rf])
            else:
                replicas = tuple(draw(st.permutations(sorted(brokers)))[:rf])
            layout[(f"t{t}", p)] = replicas
            sizes[(f"t{t}", p)] = draw(st.integers(0, 2**30))
    return layout, brokers, sizes


def _apply(layout: Layout, targets: dict[str, tuple[tuple[int, ...], ...]]) -> Layout:
    after = dict(layout)
    after.update({(topic, p): replicas for topic, target in targets.items() for p, replicas in enumerate(target)})
    return after


def _groups(after: Layout, brokers: dict[int, str | None]) -> list[list[int]]:
    """The brokers that trade replicas: each rack's when every partition has a replica in each rack (a move
    across racks would narrow a spread), else all."""
    racks = {r or f"broker-{b}" for b, r in brokers.items()}
    locked = all(len({brokers[b] or f"broker-{b}" for b in r}) == len(r) == len(racks) for r in after.values())
    return [[b for b in brokers if (brokers[b] or f"broker-{b}") == r] for r in sorted(racks)] if locked \
        else [sorted(brokers)]


def _balanced(kind: str, before: Layout, after: Layout, brokers: dict[int, str | None], moves: Moves) -> None:
    """Racked or without racks, every broker within the floor and ceiling of its group's mean, after at least
    the bound's moves. Mixed, where racks may forbid that balance: no broker holds two more than another of its
    group while one of its replicas could go there without narrowing a spread."""
    load = _load(after, brokers)
    for group in _groups(after, brokers):
        if kind != "mixed":
            low, high = divmod(sum(load[b] for b in group), len(group))
            assert all(low <= load[b] <= low + (high > 0) for b in group), (group, load)
        for over in group:
            for under in group:
                if load[over] - load[under] >= 2:
                    assert not [tp for tp, r in after.items() if over in r and under not in r
                                and spread([under if b == over else b for b in r], brokers) >= spread(r, brokers)]
    if kind != "mixed":
        assert moves.replicas_moved >= moves.bound.replicas, moves
    if kind == "racked":  # within a rack every broker may take any replica: each goes straight to its place
        assert moves.detours == 0, moves


def _bounded(moves: Moves) -> None:
    """Within 5% of the bound, but for the detours the racks or the replicas' distinct brokers force (each a
    copy the bound does not count; none where every partition spans the racks)."""
    assert moves.replicas_moved <= moves.bound.replicas * 1.05 + moves.detours, moves


KINDS = st.sampled_from(["racked", "mixed", "none"])


#: Found by hypothesis: rack a holds one replica of each of 15 four-rack partitions and 6 single-replica ones on
#: its 3 brokers, more than its share; 3 single-replica ones pass through to other racks (detours).
_RACK_OVER_ITS_SHARE = {**{("t0", p): (1, 2, 3, 4) for p in range(15)}, **{("t1", p): (5,) for p in range(4)},
                        ("t2", 0): (5,), ("t3", 0): (9,)}
#: Found by hypothesis: rack d's two brokers hold 20 replicas alone in their rack of partitions on all four racks,
#: more than their shares (9 each): they can only move within rack d, which keeps them and sends the 3 others it
#: holds away; the bound counts those (42, where the plain shares said 39 and 44 moves met it).
_RACK_KEEPS_MORE_THAN_ITS_SHARE = {
    **{("t0", p): (1, 2, 3, 4) for p in range(15)}, ("t1", 0): (8,), **{("t1", p): (1,) for p in range(1, 10)},
    ("t2", 0): (1, 2, 4, 7), ("t2", 1): (1, 4, 7, 6), ("t2", 2): (5, 6, 7, 4), ("t2", 3): (5, 6, 7, 8),
    ("t2", 4): (5, 6, 7, 8), ("t3", 0): (5,), ("t3", 1): (5,), ("t3", 2): (8,), ("t3", 3): (8,)}


@settings(deadline=None)  # a loaded machine's first call may take a second
@given(KINDS.flatmap(lambda kind: st.tuples(st.just(kind), clusters(kind))), st.integers(1, 4))
@example(("mixed", (_RACK_OVER_ITS_SHARE, dict(zip(range(1, 11), "abcdabcdab", strict=True)),
                    dict.fromkeys(_RACK_OVER_ITS_SHARE, 0))), 2)
@example(("mixed", (_RACK_KEEPS_MORE_THAN_ITS_SHARE, dict(zip(range(1, 11), "abcdabcdab", strict=True)),
                    dict.fromkeys(_RACK_KEEPS_MORE_THAN_ITS_SHARE, 0))), 1)
def test_adding_brokers_moves_no_more_than_the_bound_and_reaches_every_share(
        drawn: tuple[str, Drawn], added: int) -> None:
    kind, (layout, brokers, sizes) = drawn
    racks = sorted({r for r in brokers.values() if r})
    top = max(brokers)
    grown = {**brokers, **{top + i: racks[(top + i - 1) % len(racks)] if racks else None
                           for i in range(1, added + 1)}}
    moves = target_assignment(layout, grown, set(), sizes)
    _bounded(moves)
    assert moves.bound == lower_bound(layout, grown, (), sizes)
    assert moves.bytes_moved >= moves.bound.bytes or kind == "mixed"
    after = _apply(layout, moves.targets)
    _kept_shape(layout, after, grown)
    _balanced(kind, layout, after, grown, moves)
    _leaders_even_where_the_replicas_allow(after, grown)
    assert target_assignment(after, grown, set(), sizes).targets == {}  # balanced: nothing moves


@settings(deadline=None)
@given(KINDS.flatmap(lambda kind: st.tuples(st.just(kind), clusters(kind))), st.data())
def test_removing_a_broker_moves_its_replicas_and_what_balance_needs_and_no_more(
        drawn: tuple[str, Drawn], data: st.DataObject) -> None:
    kind, (layout, brokers, sizes) = drawn
    leaving = {data.draw(st.sampled_from(sorted(brokers)))}
    try:
        moves = target_assignment(layout, brokers, leaving, sizes)
    except PlacementRefused:  # the rest cannot hold a replication factor or a rack spread: drain names them
        with pytest.raises(PlacementRefused):
            drain(layout, brokers, leaving)
        return
    _bounded(moves)
    assert moves.bound.replicas >= sum(1 for r in layout.values() for b in r if b in leaving)
    after = _apply(layout, moves.targets)
    staying = {b: r for b, r in brokers.items() if b not in leaving}
    assert not any(leaving & set(r) for r in after.values())
    _kept_shape(layout, after, brokers)
    _balanced(kind, layout, after, staying, moves)


def test_a_rack_s_last_broker_is_no_passage_for_what_could_go_straight_to_its_place() -> None:
    """Broker 2 (rack b) leaves: its 21 replicas of the three-rack topics can only go to broker 5, the last of
    rack b, which must then shed its 7 replicas of t3 (racks a and b); broker 3 sheds 5 of its own. Moving
    broker 3's t1 replicas on to make room for broker 5's (a chain) cost 5 copies more than sending broker 5's
    straight to broker 6 (hypothesis found it): 82 is the least (21 into broker 5, 61 into 4, 6 and 7)."""
    brokers: dict[int, str | None] = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c", 7: "a"}
    before: Layout = {("t4", 0): (1,)}
    for topic, count, replicas in (("t0", 9, (1, 2, 3)), ("t1", 12, (1, 2, 3)), ("t2", 17, (1,)), ("t2", 5, (3,)),
                                   ("t3", 12, (1, 2)), ("t3", 7, (1, 5))):
        first = sum(1 for t, _ in before if t == topic)
        before |= {(topic, first + p): replicas for p in range(count)}
    moves = target_assignment(before, brokers, {2}, dict.fromkeys(before, 0))
    _bounded(moves)
    assert moves.bound.replicas == 75 and moves.replicas_moved <= 83, moves
    after = _apply(before, moves.targets)
    _kept_shape(before, after, brokers)
    assert not any(2 in r for r in after.values())


def test_a_new_broker_in_a_balanced_three_rack_cluster_gets_its_racks_share_moving_exactly_that() -> None:
    """3 -> 4 brokers, RF 3 over 3 racks (every partition in each rack): the new broker shares rack a with
    broker 1, so it takes half of rack a's replicas, from broker 1 alone; leaders even out by reordering."""
    before = _three_racks(30)
    moves = target_assignment(before, RESIZE_RACKS, set())
    after = _apply(before, moves.targets)
    load = _load(after, RESIZE_RACKS)
    assert load[4] == 15 and load[1] == 15 and load[2] == load[3] == 30
    assert moves.replicas_moved == moves.bound.replicas == 15
    leaders = Counter(r[0] for r in after.values())
    assert max(leaders.values()) - min(leaders.values()) <= 1


def test_sizes_choose_the_smallest_replicas_and_the_cost_is_the_busiest_brokers_bytes_at_the_throttle() -> None:
    before = {("t", p): (1, 2) for p in range(4)}
    sizes = {("t", 0): 400, ("t", 1): 100, ("t", 2): 300, ("t", 3): 200}
    moves = target_assignment(before, dict.fromkeys([1, 2, 3, 4]), set(), sizes)
    assert moves.replicas_moved == moves.bound.replicas == 4
    assert moves.bytes_moved == moves.bound.bytes == 2 * (100 + 200)  # the two smallest partitions, each twice
    # Broker 1 leads every partition, so it sends each copy: 600 bytes at 100 bytes/s.
    assert moves.busiest_bytes == 600 and moves.seconds_at(100) == 6.0


def test_even_topics_moves_more_than_the_bound_where_the_skew_was_already_there() -> None:
    """Topic `a` all on brokers 1-2, topic `b` all on 3-4: balanced per broker, skewed per topic. Adding nothing
    moves nothing by default; evening each topic moves half of every topic."""
    before = {("a", p): (1, 2) for p in range(4)} | {("b", p): (3, 4) for p in range(4)}
    brokers = dict.fromkeys([1, 2, 3, 4])
    assert target_assignment(before, brokers, set()).replicas_moved == 0
    evened = target_assignment(before, brokers, set(), even_topics=True)
    assert evened.bound.replicas == 0 and evened.replicas_moved == 8
