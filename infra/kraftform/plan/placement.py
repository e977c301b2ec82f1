"""Where replicas go: pure, deterministic, rack-aware.

When a topic's replication factor changes (`reassign`), existing replicas stay where they are (moving data
costs more than anything else here) and the first replica, the preferred leader, never changes, so leadership
stays as balanced as Kafka made it. New replicas go to a rack the partition does not use yet, then to the
broker holding the fewest replicas; a decrease drops replicas from racks used twice first, then from the
busiest brokers.

When brokers join or leave (`target_assignment`), the replicas that move are the ones balance needs: those of
the leaving brokers and those above a broker's share, each straight to a broker below its share, against a
lower bound the plan shows (`lower_bound`); evening each topic too is a setting (`placement.even_topics`).
"""

from __future__ import annotations

import bisect
import functools
from collections import Counter, defaultdict, deque
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from kraftform.units import human_bytes

Assignment = tuple[tuple[int, ...], ...]


def reassign(assignment: Sequence[Sequence[int]], brokers: Mapping[int, str | None], replication: int) -> Assignment:
    """The new replica lists for `replication` replicas per partition; `brokers` maps id -> rack."""
    if replication > len(brokers):
        raise ValueError(f"replication factor {replication} needs {replication} brokers; the cluster has "
                         f"{len(brokers)}")

    def rack(broker: int) -> str:
        return brokers.get(broker) or f"broker-{broker}"  # no racks: every broker is its own failure domain

    load = Counter(b for replicas in assignment for b in replicas)
    out: list[tuple[int, ...]] = []
    for replicas in assignment:
        kept = list(replicas)
        while len(kept) > replication:
            racks = Counter(rack(b) for b in kept)
            victim = max(kept[1:], key=lambda b: (racks[rack(b)] > 1, load[b], b))
            kept.remove(victim)
            load[victim] -= 1
        while len(kept) < replication:
            used = {rack(b) for b in kept}
            best = min((b for b in sorted(brokers) if b not in kept), key=lambda b: (rack(b) in used, load[b], b))
            kept.append(best)
            load[best] += 1
        out.append(tuple(kept))
    return tuple(out)


def describe(assignment: Assignment) -> str:
    """`1,2,3 | 2,3,1`: short enough for a plan line, exact enough to review."""
    shown = " | ".join(",".join(map(str, replicas)) for replicas in assignment[:6])
    return shown + (f" | ... ({len(assignment)} partitions)" if len(assignment) > 6 else "")


Partition = tuple[str, int]


class PlacementRefused(ValueError):
    """The brokers left cannot hold what the partitions need; the message names the topics."""


def spread(replicas: Sequence[int], brokers: Mapping[int, str | None]) -> int:
    """How many failure domains (racks; brokers when no racks are set) a partition's replicas stand in."""
    return len({brokers.get(b) or f"broker-{b}" for b in replicas})


def _rack(brokers: Mapping[int, str | None], broker: int) -> str:
    return brokers.get(broker) or f"broker-{broker}"


def drain(assignment: Mapping[Partition, Sequence[int]], brokers: Mapping[int, str | None],
          leaving: Collection[int]) -> dict[Partition, tuple[int, ...]]:
    """Every replica on a leaving broker moved to a staying one, in the same place in the replica list (the
    preferred leader keeps its position): to a broker of a rack the partition does not use yet, then the least
    loaded. `brokers` maps every broker, leaving ones included, to its rack. Raises PlacementRefused naming the
    topics whose replication factor or rack spread the staying brokers cannot hold."""
    staying = sorted(b for b in brokers if b not in leaving)
    load = Counter(b for replicas in assignment.values() for b in replicas if b not in leaving)
    out: dict[Partition, tuple[int, ...]] = {}
    short: set[str] = set()
    narrower: set[str] = set()
    for tp, replicas in sorted(assignment.items()):
        kept = list(replicas)
        for i, b in enumerate(replicas):
            if b not in leaving:
                continue
            others = {_rack(brokers, x) for j, x in enumerate(kept) if j != i}
            candidates = [c for c in staying if c not in kept]
            if not candidates:
                short.add(tp[0])
                break
            best = min(candidates, key=lambda c: (_rack(brokers, c) in others, load[c], c))
            kept[i] = best
            load[best] += 1
        else:
            if spread(kept, brokers) < spread(replicas, brokers):
                narrower.add(tp[0])
            out[tp] = tuple(kept)
    if short:
        raise PlacementRefused(f"{len(staying)} broker(s) would stay, fewer than the replication factor of "
                               f"{', '.join(sorted(short))}: lower it first, or keep the brokers")
    if narrower:
        raise PlacementRefused(f"the staying brokers' racks cannot keep the rack spread of "
                               f"{', '.join(sorted(narrower))}: keep a broker in each rack they use")
    return out


class _Layout:
    """The assignment being balanced, indexed so that each step costs what it touches, not the whole cluster:
    replica counts per broker (overall and per topic), each topic's partitions per broker in order, and the
    partitions each broker leads."""

    def __init__(self, assignment: Mapping[Partition, Sequence[int]], brokers: Mapping[int, str | None],
                 leaving: Collection[int] = ()) -> None:
        self.brokers = sorted(brokers)
        self.rack = {b: _rack(brokers, b) for b in brokers}
        self.current = {tp: list(r) for tp, r in assignment.items()}
        self.total: Counter[int] = Counter(dict.fromkeys(self.brokers, 0))
        self.per_topic: dict[str, Counter[int]] = {}
        self.hosted: dict[tuple[str, int], list[int]] = {}
        racks = {self.rack[b] for b in self.brokers if b not in leaving}
        self.same_rack: dict[int, list[int]] = {b: [c for c in self.brokers if self.rack[c] == self.rack[b]]
                                                for b in self.brokers}
        #: Topics whose every partition has one replica in each rack (of the staying brokers; a replica on a
        #: leaving broker alone in its rack drains to the rack its partition lacks): their replicas can only
        #: trade within a rack (any other move narrows a spread), and moves keep it so.
        self.rack_locked: dict[str, bool] = {}
        rack = self.rack
        hosted: defaultdict[tuple[str, int], list[int]] = defaultdict(list)
        replicas_of = sorted(self.current.items())
        for (topic, partition), replicas in replicas_of:
            for b in replicas:
                hosted[(topic, b)].append(partition)
        for b in {b for (_, b) in hosted} - set(rack):
            rack[b] = f"broker-{b}"
        self.hosted = dict(hosted)
        #: Replicas carried through a third broker (`_detour`).
        self.detours = 0
        self._topics_on: defaultdict[int, set[str]] = defaultdict(set)
        for topic, b in hosted:
            self._topics_on[b].add(topic)
        self.total.update(Counter(b for (_, b), partitions in hosted.items() for _ in partitions))
        for (topic, b), partitions in hosted.items():
            load = self.per_topic.get(topic)
            if load is None:
                load = self.per_topic[topic] = Counter(dict.fromkeys(self.brokers, 0))
            load[b] += len(partitions)
        for (topic, _), replicas in replicas_of:
            if self.rack_locked.get(topic, True):
                used = {rack[b] for b in replicas}
                self.rack_locked[topic] = len(used) == len(replicas) == len(racks)

    def drop(self, brokers: Collection[int]) -> None:
        """Brokers that hold nothing any more (drained) leave the layout, so nothing moves back to them."""
        self.brokers = [b for b in self.brokers if b not in brokers]
        for counter in (self.total, *self.per_topic.values()):
            for b in brokers:
                counter.pop(b, None)
        self.same_rack = {b: [c for c in self.brokers if self.rack[c] == self.rack[b]] for b in self.brokers}

    def assignment(self) -> dict[Partition, tuple[int, ...]]:
        return {tp: tuple(r) for tp, r in self.current.items()}

    def topics_on(self, broker: int) -> list[str]:
        """The topics `broker` holds (or held: a topic whose last replica left it stays, with none)."""
        return sorted(self._topics_on[broker])

    @property
    def all_rack_locked(self) -> bool:
        """Every partition has a replica in each rack: any move across racks would narrow a spread."""
        return bool(self.rack_locked) and all(self.rack_locked.values())

    def partners(self, topic: str | None, over: int) -> list[int]:
        """The brokers `over` may trade `topic`'s replicas with (every topic's, with None): its rack's when the
        topics are rack-locked, else all."""
        locked = self.all_rack_locked if topic is None else self.rack_locked[topic]
        return self.same_rack[over] if locked else self.brokers

    def movable(self, tp: Partition, over: int, under: int) -> bool:
        """`over`'s replica of `tp` may go to `under`: not already there, and the rack spread does not narrow
        (it narrows only when `under`'s rack is already used and `over` is alone in its own)."""
        replicas = self.current[tp]
        if under in replicas:
            return False
        rack = self.rack
        rack_over, rack_under = rack[over], rack[under]
        if rack_over == rack_under:
            return True
        used = [rack[b] for b in replicas]
        return rack_under not in used or used.count(rack_over) > 1

    def first_movable(self, topic: str, over: int, under: int) -> Partition | None:
        for partition in self.hosted.get((topic, over), ()):
            if self.movable((topic, partition), over, under):
                return topic, partition
        return None

    def move(self, tp: Partition, over: int, under: int) -> None:
        replicas = self.current[tp]
        replicas[replicas.index(over)] = under
        for counter in (self.total, self.per_topic[tp[0]]):
            counter[over] -= 1
            counter[under] += 1
        self.hosted[(tp[0], over)].remove(tp[1])
        bisect.insort(self.hosted.setdefault((tp[0], under), []), tp[1])
        self._topics_on[under].add(tp[0])


def balance(assignment: Mapping[Partition, Sequence[int]], brokers: Mapping[int, str | None],
            even_topics: bool = False, sizes: Mapping[Partition, int] | None = None
            ) -> dict[Partition, tuple[int, ...]]:
    """Replicas moved, never narrowing a partition's rack spread, until every broker holds within one replica of
    those it can trade with (the brokers of its rack when every partition has a replica in each rack, else all):
    only from brokers above their share, each to a broker below its share (`_shed`), so no more replicas move
    than balance needs. With `even_topics`, each topic is first evened over the brokers too (`_within_topic`: a
    new broker takes its share of every topic's load, at the price of moving what was skewed before). Then
    preferred leaders (first replicas) are reordered, which moves no data, until leaders per broker are within
    one of each other where the replicas allow.

    Each step looks only at what it can change, so 100,000 partitions on 30 brokers balance in seconds
    (tests/bench/bench_placement.py)."""
    layout = _Layout(assignment, brokers)
    _balance(layout, even_topics, sizes or {})
    return layout.assignment()


def _balance(layout: _Layout, even_topics: bool, sizes: Mapping[Partition, int],
             original: Mapping[Partition, Sequence[int]] | None = None) -> None:
    if even_topics:
        for topic in sorted(layout.per_topic):
            _within_topic(layout, topic)
    else:
        _shed(layout, frozenset(), sizes)
    _across_topics(layout, even_topics)
    if original is not None:
        _shortcut(layout, original, even_topics)
    _leaders(layout)


def _shortcut(layout: _Layout, original: Mapping[Partition, Sequence[int]], even_topics: bool) -> None:
    """Chains of moves collapsed: where broker Y received a replica of P1 and gave up its replica of P2 to Z, P1's
    goes straight to Z and Y keeps P2's, one copy fewer for the same loads. The steps before look at one move
    at a time, so a broker the racks made a passage (a rack's last broker taking what only it may hold, then
    shedding to below its share what others could have sent straight there) leaves such chains.
    With `even_topics` only within a topic, so each topic's loads stay as evened."""
    received: defaultdict[int, list[Partition]] = defaultdict(list)
    sent: defaultdict[int, list[Partition]] = defaultdict(list)
    for tp, replicas in sorted(layout.current.items()):
        before = original[tp]
        if list(before) != replicas:
            for b in replicas:
                if b not in before:
                    received[b].append(tp)
            for b in before:
                if b not in replicas:
                    sent[b].append(tp)
    for middle in sorted(received.keys() & sent.keys()):
        takers = received[middle]
        for given in sent[middle]:
            for to in [b for b in layout.current[given] if b not in original[given]]:
                taker = _taker(layout, original, takers, given, middle, to, even_topics)
                if taker is not None:
                    takers.remove(taker)
                    layout.move(taker, middle, to)
                    layout.move(given, to, middle)
                    break


def _taker(layout: _Layout, original: Mapping[Partition, Sequence[int]], takers: Sequence[Partition],
           given: Partition, middle: int, to: int, even_topics: bool) -> Partition | None:
    """A partition `middle` received whose replica may go to `to` instead, while `given`'s goes back to `middle`
    (the first of a bounded few looked at, so a cluster of 100,000 partitions stays linear)."""
    if not layout.movable(given, to, middle):
        return None
    for tp in takers[:64]:
        if (not even_topics or tp[0] == given[0]) and middle in layout.current[tp] \
                and middle not in original[tp] and layout.movable(tp, middle, to):
            return tp
    return None


def _groups(layout: _Layout, leaving: Collection[int]) -> list[tuple[list[int], list[int]]]:
    """(staying, leaving) brokers of each group whose replicas trade only among themselves: a rack's when every
    partition has a replica in each rack (any move across racks would narrow a spread), else the whole cluster."""
    staying = [b for b in layout.brokers if b not in leaving]
    gone = [b for b in layout.brokers if b in leaving]
    if not layout.all_rack_locked:
        return [(staying, gone)]
    racks = sorted({layout.rack[b] for b in layout.brokers})
    return [([b for b in staying if layout.rack[b] == r], [b for b in gone if layout.rack[b] == r]) for r in racks]


def _shares(load: Mapping[int, int], staying: Sequence[int], total: int) -> dict[int, int]:
    """Each staying broker's share of `total` replicas: the floor of the mean, one more for as many brokers as
    the remainder, given to those holding most (so the fewest replicas move)."""
    floor, extra = divmod(total, len(staying))
    return {b: floor + (i < extra) for i, b in enumerate(sorted(staying, key=lambda b: (-load[b], b)))}


@dataclass(frozen=True)
class Bound:
    """What any placement reaching the balance must move: every replica on a leaving broker, and from each
    staying broker what it holds above its share (in bytes, its smallest replicas)."""

    replicas: int
    bytes: int


def lower_bound(assignment: Mapping[Partition, Sequence[int]], brokers: Mapping[int, str | None],
                leaving: Collection[int] = (), sizes: Mapping[Partition, int] | None = None) -> Bound:
    """The fewest replicas (and bytes) that must move so that no replica stays on `leaving` and the brokers
    reach the balance `balance` states."""
    return _bound(_Layout(assignment, brokers, leaving), leaving, sizes or {})


def _bound(layout: _Layout, leaving: Collection[int], sizes: Mapping[Partition, int]) -> Bound:
    gone = [b for b in layout.brokers if b in leaving]
    replicas = sum(layout.total[b] for b in gone)
    size = sum(sizes.get(tp, 0) for b in gone for tp in _replicas_on(layout, b))
    for staying, group_gone in _groups(layout, leaving):
        if not staying:
            continue
        total = sum(layout.total[b] for b in (*staying, *group_gone))
        if leaving:
            share = _shares(layout.total, staying, total)
            overs = {b: layout.total[b] - share[b] for b in staying}
        else:
            overs = _rack_held_overs(layout, staying, total)
        for b in staying:
            over = overs[b]
            if over > 0:
                replicas += over
                size += sum(sorted(sizes.get(tp, 0) for tp in _replicas_on(layout, b))[:over])
    return Bound(replicas, size)


def _rack_held_overs(layout: _Layout, staying: Sequence[int], total: int) -> dict[int, int]:
    """How many replicas must leave each staying broker for the most even placement the racks allow. A replica
    alone in its rack, of a partition on every rack, moves only within that rack (anywhere else narrows the
    spread): a rack holding more of them than its brokers' shares keeps exactly those, shared among its brokers,
    and every other replica there leaves; the other brokers share the rest (again, until no rack is over). With
    no such rack, what each holds above its plain share."""
    rack = layout.rack
    racks = {rack[b] for b in staying}
    held: Counter[int] = Counter()
    for replicas in layout.current.values():
        used = [rack[b] for b in replicas]
        if set(used) == racks:
            held.update(b for b, r in zip(replicas, used, strict=True) if used.count(r) == 1)
    in_rack: Counter[str] = Counter()
    for b in staying:
        in_rack[rack[b]] += held[b]
    kept: dict[str, int] = {}
    while True:
        free = [b for b in staying if rack[b] not in kept]
        share = _shares(layout.total, free, total - sum(kept.values())) if free else {}
        over = {r: n for r, n in in_rack.items() if r not in kept and n > sum(share[b] for b in free if rack[b] == r)}
        if not over:
            break
        kept |= over
    overs = {b: max(0, layout.total[b] - share[b]) for b in share}
    for r, n in kept.items():
        members = [b for b in staying if rack[b] == r]
        target = _shares(held, members, n)
        overs |= {b: max(0, held[b] - target[b]) + layout.total[b] - held[b] for b in members}
    return overs


def _replicas_on(layout: _Layout, broker: int) -> list[Partition]:
    return [(topic, p) for topic in layout.topics_on(broker) for p in layout.hosted[(topic, broker)]]


def _shed(layout: _Layout, leaving: Collection[int], sizes: Mapping[Partition, int]) -> None:
    """Every replica of the leaving brokers, and each staying broker's replicas above its share, moved to the
    brokers below theirs: one move per replica the bound counts, where the rack spread allows it.

    Which replicas: a broker sheds its smallest first (bytes are what a move costs), followers before leaders
    (a leader moved is a leadership change; the new brokers get theirs by reordering, which copies nothing),
    then those of the topics it holds most of. Each goes to the broker below its share holding fewest of that
    topic. A first pass, taking one replica from each giver in turn, moves a replica only where the receiver
    stays within its share of the topic, so topics stay spread at no extra move; a second moves what is left."""
    for staying, gone in _groups(layout, leaving):
        if staying:  # else nowhere in its group to go: drain refuses it, naming the topics
            _shed_group(layout, staying, gone, sizes)


def _shed_group(layout: _Layout, staying: Sequence[int], gone: Sequence[int], sizes: Mapping[Partition, int]
                ) -> None:
    counts, members = layout.per_topic, (*staying, *gone)
    share = _shares(layout.total, staying, sum(layout.total[b] for b in members)) | dict.fromkeys(gone, 0)
    missing = {b: share[b] - layout.total[b] for b in staying if layout.total[b] < share[b]}
    fair = {t: -(-sum(c[b] for b in members) // len(staying)) for t, c in counts.items()}
    queues = {over: deque(sorted(_replicas_on(layout, over), key=functools.partial(_shed_order, layout, over, sizes)))
              for over in (*gone, *staying) if layout.total[over] > share[over]}
    skipped: dict[int, list[Partition]] = {b: [] for b in queues}
    placed: defaultdict[int, list[Partition]] = defaultdict(list)  # broker -> replicas this run moved there

    def place(tp: Partition, over: int, under: int) -> None:
        layout.move(tp, over, under)
        placed[under].append(tp)
        if under in missing:
            missing[under] -= 1
            if not missing[under]:
                del missing[under]

    def trade_share(tp: Partition, over: int) -> bool:
        """`tp` to a broker at the floor of the mean, which takes the place of one still below the ceiling among
        those that end one above the floor (which brokers do is free): no copy more than the bound."""
        floor = min(share[b] for b in staying)
        ceiling = next((c for c in missing if share[c] > floor), None)
        if ceiling is None:
            return False
        to = next((w for w in staying if w not in missing and share[w] == floor == layout.total[w]
                   and layout.movable(tp, over, w)), None)
        if to is None:
            return False
        share[to], share[ceiling] = share[ceiling], floor
        missing[ceiling] -= 1
        if not missing[ceiling]:
            del missing[ceiling]
        place(tp, over, to)
        return True

    def make_room(tp: Partition, over: int) -> bool:
        """`tp` to a broker at its share that one of this run's replicas leaves for a broker below its share:
        moving a replica again within a run copies it once, so no copy more than the bound."""
        for full, replicas in placed.items():
            if full in missing or not layout.movable(tp, over, full):
                continue
            for other in replicas:
                to = next((u for u in missing if other != tp and layout.movable(other, full, u)), None)
                if to is not None:
                    replicas.remove(other)
                    place(other, full, to)
                    place(tp, over, full)
                    return True
        return False

    def shed_one(over: int, strict: bool) -> bool:
        """Moves `over`'s next replica that may go somewhere (strict: to a broker within its share of the
        topic); False when none may."""
        queue = queues[over]
        while queue:
            tp = queue.popleft()
            held = counts[tp[0]]
            takers = [u for u in missing if layout.movable(tp, over, u) and (not strict or held[u] < fair[tp[0]])]
            if takers:
                place(tp, over, min(takers, key=lambda u: (held[u], -missing[u], u)))
                return True
            if strict:
                skipped[over].append(tp)
            elif trade_share(tp, over) or make_room(tp, over):
                return True
        return False

    active = list(queues)
    while active and missing:  # one replica from each giver in turn
        active = [b for b in active if layout.total[b] > share[b] and shed_one(b, True)]
    for over, queue in queues.items():
        queue.extendleft(reversed(skipped[over]))
        while layout.total[over] > share[over] and missing and shed_one(over, False):
            pass
    # A leaving broker's replica the racks keep from every broker below its share drains to one at its share,
    # which then passes another on: a copy the bound does not count.
    layout.detours += sum(layout.total[b] for b in gone)


def _shed_order(layout: _Layout, over: int, sizes: Mapping[Partition, int], tp: Partition
                ) -> tuple[int, bool, int, Partition]:
    return sizes.get(tp, 0), layout.current[tp][0] == over, -layout.per_topic[tp[0]][over], tp


def _within_topic(layout: _Layout, topic: str) -> None:
    load, total = layout.per_topic[topic], layout.total
    stuck: dict[int, set[int]] = {}  # over -> unders it has nothing movable to, until a move touches `over`
    # Each broker's place in the two orders, kept up to date move by move (a move changes two brokers' counts).
    over_keys = {b: (-load[b], -total[b], b) for b in layout.brokers}
    under_keys = {b: (load[b], total[b], b) for b in layout.brokers}

    def over_key(b: int) -> tuple[int, int, int]:
        return over_keys[b]

    def under_key(b: int) -> tuple[int, int, int]:
        return under_keys[b]

    while True:
        # The likeliest pair first (the most loaded and the least loaded it may trade with), the full order only
        # when that pair cannot trade: the same pair the full order would find first.
        over = min(over_keys.values())[2]
        under = min(map(under_keys.__getitem__, layout.partners(topic, over)))[2]
        done = None
        if load[over] - load[under] >= 2 and under not in stuck.get(over, ()):
            tp = layout.first_movable(topic, over, under)
            if tp is None:
                stuck.setdefault(over, set()).add(under)
            else:
                done = (tp, over, under)
        lowest = 0 if done else min(under_keys.values())[0]
        for over in [] if done else sorted(layout.brokers, key=over_key):
            if load[over] - lowest < 2:
                break
            nothing = stuck.setdefault(over, set())
            for under in sorted(layout.partners(topic, over), key=under_key):
                if load[over] - load[under] < 2:
                    break
                if under in nothing:
                    continue
                tp = layout.first_movable(topic, over, under)
                if tp is None:
                    nothing.add(under)
                    continue
                done = (tp, over, under)
                break
            if done:
                break
        if done is None:
            return
        tp, over, under = done
        layout.move(tp, over, under)
        for b in (over, under):
            over_keys[b], under_keys[b] = (-load[b], -total[b], b), (load[b], total[b], b)
        for b in (over, *layout.current[tp]):  # the brokers whose movable partitions this changed
            stuck.pop(b, None)


def _across_topics(layout: _Layout, even_topics: bool) -> None:
    """What `_shed` left uneven: from the broker holding most to one holding at least two fewer (with
    `even_topics`, only a topic the giver holds more of); where no replica may go directly (each would narrow
    a rack spread or meet its partition's other replica), through a third broker (`_detour`)."""
    total, per_topic = layout.total, layout.per_topic
    topics = sorted(per_topic)
    stuck: set[tuple[int, int]] = set()
    while True:
        by_load = sorted(layout.brokers, key=lambda b: (-total[b], b))
        done = None
        for over in by_load:
            if total[over] - total[by_load[-1]] < 2:
                break
            partners = set(layout.partners(None, over))
            for under in reversed(by_load):
                if total[over] - total[under] < 2:
                    break
                if (over, under) in stuck or under not in partners:
                    continue
                for topic in topics:
                    held = per_topic[topic]
                    if held[over] < 1 or (even_topics and held[over] <= held[under]):
                        continue
                    tp = layout.first_movable(topic, over, under)
                    if tp is not None:
                        done = (tp, over, under)
                        break
                if done:
                    break
                stuck.add((over, under))
            if done:
                break
        if done is None:
            if _detour(layout, by_load):
                stuck = set()
                continue
            return
        tp, over, under = done
        group = layout.partners(None, over)
        if total[over] * len(group) <= sum(total[b] for b in group) + len(group) - 1:  # at most the ceiling
            layout.detours += 1  # a broker at its share passes one on to a broker the racks kept from filling
        layout.move(tp, over, under)
        touched = {over, under, *layout.current[tp]}
        stuck = {pair for pair in stuck if pair[0] not in touched and pair[1] not in touched}


def _detour(layout: _Layout, by_load: Sequence[int]) -> bool:
    """One replica from the broker holding most to one holding at least two fewer, through a third: a replica
    of `over` to `middle`, then another of `middle` to `under`, so `middle` keeps its count. Two copies where
    the bound counts one; `layout.detours` counts them for the plan."""
    total = layout.total
    for over in by_load:
        for under in reversed(by_load):
            if total[over] - total[under] < 2:
                break
            partners = layout.partners(None, over)
            if under not in partners:
                continue
            for middle in partners:
                if middle in (over, under):
                    continue
                for first in _replicas_on(layout, over):
                    if not layout.movable(first, over, middle):
                        continue
                    layout.move(first, over, middle)
                    second = next((tp for tp in _replicas_on(layout, middle)
                                   if tp != first and layout.movable(tp, middle, under)), None)
                    if second is not None:
                        layout.move(second, middle, under)
                        layout.detours += 1
                        return True
                    layout.move(first, middle, over)
    return False


def _leaders(layout: _Layout) -> None:
    """Preferred leaders evened out by reordering replica lists (no data moves): each broker, from the one leading
    fewest, takes the lead of partitions it follows whose leader leads at least two more. Passes repeat until one
    changes nothing: then no partition has a follower leading two fewer than its leader. Each pass reads only
    the partitions each broker follows, and a broker within one of the most leading reads none."""
    leaders: Counter[int] = Counter(dict.fromkeys(layout.brokers, 0))
    follows: defaultdict[int, list[Partition]] = defaultdict(list)
    for tp, replicas in sorted(layout.current.items()):
        leaders[replicas[0]] += 1
        for b in replicas[1:]:
            follows[b].append(tp)
    changed = True
    while changed:
        changed = False
        for under in sorted(leaders, key=lambda b: (leaders[b], b)):
            highest = max(leaders.values())
            if highest - leaders[under] < 2:
                continue
            kept: list[Partition] = []
            for tp in follows.get(under, ()):
                replicas = layout.current[tp]
                if replicas[0] == under or under not in replicas:
                    continue  # it leads it now, or no longer holds it: a stale entry
                over = replicas[0]
                if leaders[over] - leaders[under] < 2:
                    kept.append(tp)
                    continue
                replicas.remove(under)
                replicas.insert(0, under)
                leaders[over] -= 1
                leaders[under] += 1
                follows[over].append(tp)
                changed = True
            follows[under] = kept


@dataclass
class Moves:
    """A reassignment: per topic the full target, what changes, and what it costs against the bound."""

    targets: dict[str, tuple[tuple[int, ...], ...]] = field(default_factory=dict)
    replicas_moved: int = 0
    leaders_changed: int = 0
    partitions: int = 0
    #: partition -> how many new replicas it gets (each a full copy).
    copies: dict[Partition, int] = field(default_factory=dict)
    bytes_moved: int = 0
    #: What any placement reaching the same balance must move.
    bound: Bound = Bound(0, 0)
    #: The most bytes one broker receives, or sends as a partition's leader: the copy takes at least this over
    #: the per-broker replication throttle.
    busiest_bytes: int = 0
    #: Replicas the rack spread kept from going straight to a broker below its share (carried through a third
    #: broker, or drained to one at its share): each may cost a copy more than the bound, which counts what
    #: balance needs, not what the racks allow.
    detours: int = 0
    even_topics: bool = False
    #: Replicas the other `placement.even_topics` setting would move (the plan shows both); None: not computed.
    other_setting_moves: int | None = None

    def seconds_at(self, throttle_bytes_per_s: int) -> float:
        return self.busiest_bytes / throttle_bytes_per_s if throttle_bytes_per_s > 0 else 0.0


def target_assignment(current: Mapping[Partition, tuple[int, ...]], racks: Mapping[int, str | None],
                      leaving: Collection[int], sizes: Mapping[Partition, int] | None = None,
                      even_topics: bool = False) -> Moves:
    """Drain `leaving` and balance over the rest: the reassignment, per topic, of every topic that changes,
    with its bytes (from `sizes`, each partition's bytes) against the lower bound. Raises PlacementRefused."""
    sizes = sizes or {}
    staying = {b: r for b, r in racks.items() if b not in leaving}
    layout = _Layout(current, racks, leaving)
    bound = _bound(layout, leaving, sizes)
    if leaving and not even_topics:  # straight to the brokers below their share
        _shed(layout, frozenset(leaving), sizes)
    left = [b for b in leaving if layout.total[b]]
    if left:  # what could not go there (or anywhere: refused, naming the topics) drains
        detours = layout.detours
        layout = _Layout(drain(layout.assignment(), racks, left), staying)
        layout.detours = detours
    elif leaving:
        layout.drop(leaving)
    _balance(layout, even_topics, sizes, current)
    balanced = layout.assignment()
    moves = Moves(bound=bound, detours=layout.detours, even_topics=even_topics)
    changed: set[str] = set()
    received: Counter[int] = Counter()
    sent: Counter[int] = Counter()
    for tp, replicas in balanced.items():
        if replicas == current[tp]:
            continue
        changed.add(tp[0])
        added = set(replicas) - set(current[tp])
        moves.replicas_moved += len(added)
        moves.leaders_changed += replicas[0] != current[tp][0]
        if added:
            moves.copies[tp] = len(added)
            size = sizes.get(tp, 0)
            moves.bytes_moved += size * len(added)
            received.update(dict.fromkeys(added, size))
            sent[current[tp][0]] += size * len(added)
    moves.busiest_bytes = max([*received.values(), *sent.values(), 0])
    # A broker that both sends and receives carries replicas through: what the racks made it pass on (a rack
    # over its share sheds replicas of other topics so the spread topics' replicas can stay) counts as a detour
    # even where the walk above counted none. A detour counted where the shares' ties would have let the direct
    # move cost nothing more is not one: only the copies above the bound are the racks' price.
    sends, receives = Counter[int](), Counter[int]()
    for tp, replicas in balanced.items():
        sends.update(set(current[tp]) - set(replicas))
        receives.update(set(replicas) - set(current[tp]))
    carried = sum(min(sends[b], receives[b]) for b in sends)
    moves.detours = min(max(moves.detours, carried), max(0, moves.replicas_moved - bound.replicas))
    moves.partitions = len(moves.copies)
    partitions: dict[str, int] = {}
    for topic, partition in balanced:
        partitions[topic] = max(partitions.get(topic, 0), partition + 1)
    for topic in sorted(changed):
        moves.targets[topic] = tuple(balanced[(topic, p)] for p in range(partitions[topic]))
    return moves


def estimate_moves(current: Mapping[Partition, tuple[int, ...]], racks: Mapping[int, str | None],
                   leaving: Collection[int], sizes: Mapping[Partition, int], even_topics: bool) -> Moves:
    """The moves under the declared `placement.even_topics`, with what the other setting would move: what a plan
    shows a reviewer before any replica moves. Raises PlacementRefused."""
    moves = target_assignment(current, racks, leaving, sizes, even_topics)
    moves.other_setting_moves = target_assignment(current, racks, leaving, sizes, not even_topics).replicas_moved
    return moves


#: The replication throttle per broker while replicas move, unless apply's --throttle (or Pulumi's input) says.
DEFAULT_THROTTLE = 50 * 1024 * 1024


def kafka_layout(topics: Sequence[tuple[str, int, int]], brokers: Mapping[int, str | None]
                 ) -> dict[Partition, tuple[int, ...]]:
    """The replicas Kafka's rack-aware assignment gives new topics (name, partitions, replication factor):
    brokers listed alternating racks; each partition's first replica one further along the list than the last
    partition's, the others the next brokers along of a rack the partition does not use yet (any rack once
    each is used). Kafka draws each topic's start at random; here it is the topic's place in the list, so an
    offline estimate is the same on every run."""
    by_rack: dict[str, list[int]] = defaultdict(list)
    for b in sorted(brokers):
        by_rack[_rack(brokers, b)].append(b)
    columns = list(by_rack.values())
    alternating = [column[i] for i in range(max(map(len, columns), default=0)) for column in columns
                   if i < len(column)]
    count, racks = len(alternating), len(by_rack)
    layout: dict[Partition, tuple[int, ...]] = {}
    for start, (name, partitions, replication) in enumerate(topics):
        for p in range(partitions):
            first = (start + p) % count
            replicas = [alternating[first]]
            for step in range(1, count):
                if len(replicas) == min(replication, count):
                    break
                b = alternating[(first + step) % count]
                used = {_rack(brokers, r) for r in replicas}
                if _rack(brokers, b) not in used or len(used) == racks:
                    replicas.append(b)
            for b in alternating:  # a rack used twice, where the partition needs more replicas than racks
                if len(replicas) < min(replication, count) and b not in replicas:
                    replicas.append(b)
            layout[(name, p)] = tuple(replicas)
    return layout


def describe_moves(moves: Moves, throttle_bytes_per_s: int) -> str:
    """The moves against their lower bound, in replicas, bytes and time at the per-broker throttle, and what
    the other `placement.even_topics` setting would move."""
    detours = f" (and {moves.detours} the rack spread forces)" if moves.detours else ""
    other = ("" if moves.other_setting_moves is None else
             f"; with placement.even_topics: {str(not moves.even_topics).lower()}, {moves.other_setting_moves} would")
    seconds = moves.seconds_at(throttle_bytes_per_s)
    return (f"{moves.replicas_moved} replica(s) of {moves.partitions} partition(s) in {len(moves.targets)} topic(s) "
            f"move, where balance needs at least {moves.bound.replicas}{detours}{other}: "
            f"{human_bytes(moves.bytes_moved)} to copy (at least {human_bytes(moves.bound.bytes)}), about "
            f"{_about(seconds)} at {human_bytes(throttle_bytes_per_s)}/s per broker (the "
            f"busiest copies {human_bytes(moves.busiest_bytes)}); {moves.leaders_changed} preferred leader(s) change")


def _about(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min" if seconds < 7200 else \
        f"{seconds / 3600:.1f} h"


Share = tuple[str, int, tuple[tuple[int, ...], ...]]


def reassignment_batches(targets: Mapping[str, tuple[tuple[int, ...], ...]], size: int) -> list[list[Share]]:
    """The targets in batches of `size` partitions (the last may be smaller), a large topic split across
    batches: each share is (topic, first partition, the targets of its partitions from there)."""
    batches: list[list[Share]] = [[]]
    room = size
    for topic in sorted(targets):
        target, first = targets[topic], 0
        while first < len(target):
            if room == 0:
                batches.append([])
                room = size
            share = target[first:first + room]
            batches[-1].append((topic, first, share))
            first += len(share)
            room -= len(share)
    return [b for b in batches if b]
