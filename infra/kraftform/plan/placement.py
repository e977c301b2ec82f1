"""Where replicas go when a topic's replication factor changes: pure, deterministic, rack-aware.

Existing replicas stay where they are (moving data costs more than anything else here) and the first
replica, the preferred leader, never changes, so leadership stays as balanced as Kafka made it. New
replicas go to a rack the partition does not use yet, then to the broker holding the fewest replicas;
a decrease drops replicas from racks used twice first, then from the busiest brokers.
"""

from __future__ import annotations

import bisect
from collections import Counter, defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

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

    def __init__(self, assignment: Mapping[Partition, Sequence[int]], brokers: Mapping[int, str | None]) -> None:
        self.brokers = sorted(brokers)
        self.rack = {b: _rack(brokers, b) for b in brokers}
        self.current = {tp: list(r) for tp, r in assignment.items()}
        self.total: Counter[int] = Counter(dict.fromkeys(self.brokers, 0))
        self.per_topic: dict[str, Counter[int]] = {}
        self.hosted: dict[tuple[str, int], list[int]] = {}
        racks = {self.rack[b] for b in self.brokers}
        self.same_rack: dict[int, list[int]] = {b: [c for c in self.brokers if self.rack[c] == self.rack[b]]
                                                for b in self.brokers}
        #: Topics whose every partition has one replica in each rack: their replicas can only trade within a
        #: rack (any other move narrows a spread), and moves keep it so.
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
        self.total.update(Counter(b for (_, b), partitions in hosted.items() for _ in partitions))
        for (topic, b), partitions in hosted.items():
            load = self.per_topic.get(topic)
            if load is None:
                load = self.per_topic[topic] = Counter(dict.fromkeys(self.brokers, 0))
            load[b] += len(partitions)
        for (topic, _), replicas in replicas_of:
            if self.rack_locked.get(topic, True):
                used = {rack[b] for b in replicas}
                self.rack_locked[topic] = len(used) == len(replicas) and used == racks

    def partners(self, topic: str | None, over: int) -> list[int]:
        """The brokers `over` may trade `topic`'s replicas with (every topic's, with None): its rack's when the
        topics are rack-locked, else all."""
        locked = all(self.rack_locked.values()) if topic is None else self.rack_locked[topic]
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


def balance(assignment: Mapping[Partition, Sequence[int]],
            brokers: Mapping[int, str | None]) -> dict[Partition, tuple[int, ...]]:
    """Replicas moved, one at a time, never narrowing a partition's rack spread: first within each topic, from
    the broker holding the most of its replicas to one holding at least two fewer (a new broker takes its share
    of every topic's load and disk, not only of whatever is cheapest to move); then across topics, where a move
    keeps each topic within one. Ties go to the brokers holding most and fewest replicas overall. Then preferred
    leaders (first replicas) are reordered, which moves no data, until leaders per broker are within one of each
    other where the replicas allow. A broker ends within one replica of those it can trade with (the brokers of
    its rack, when racks hold different numbers of brokers).

    Each step looks only at what it can change: pairs of brokers found to have nothing to trade are remembered
    until a move touches one of them, so 100,000 partitions on 30 brokers balance in seconds
    (tests/bench/bench_placement.py)."""
    layout = _Layout(assignment, brokers)
    for topic in sorted(layout.per_topic):
        _within_topic(layout, topic)
    _across_topics(layout)
    _leaders(layout)
    return {tp: tuple(r) for tp, r in layout.current.items()}


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


def _across_topics(layout: _Layout) -> None:
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
                    if per_topic[topic][over] - per_topic[topic][under] < 1:
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
            return
        tp, over, under = done
        layout.move(tp, over, under)
        touched = {over, under, *layout.current[tp]}
        stuck = {pair for pair in stuck if pair[0] not in touched and pair[1] not in touched}


def _leaders(layout: _Layout) -> None:
    """Preferred leaders evened out by reordering replica lists (no data moves), in passes over the brokers from
    the one leading most: a partition's leadership goes to the follower leading fewest when that one leads at
    least two fewer. It ends when a whole pass changes nothing: then no partition has such a follower."""
    leaders: Counter[int] = Counter(dict.fromkeys(layout.brokers, 0))
    led: dict[int, list[Partition]] = {}
    for tp, replicas in sorted(layout.current.items()):
        leaders[replicas[0]] += 1
        led.setdefault(replicas[0], []).append(tp)
    changed = True
    while changed:
        changed = False
        for over in sorted(leaders, key=lambda b: (-leaders[b], b)):
            kept: list[Partition] = []
            for tp in led.get(over, ()):
                replicas = layout.current[tp]
                below = leaders[over] - 2  # a follower leading at most this many may take the lead
                if not any(leaders[b] <= below for b in replicas[1:]):
                    kept.append(tp)
                    continue
                under = min(replicas[1:], key=lambda b: (leaders[b], b))
                replicas.remove(under)
                replicas.insert(0, under)
                leaders[over] -= 1
                leaders[under] += 1
                bisect.insort(led.setdefault(under, []), tp)
                changed = True
            led[over] = kept


@dataclass
class Moves:
    """A reassignment: per topic the full target, and what changes."""

    targets: dict[str, tuple[tuple[int, ...], ...]] = field(default_factory=dict)
    replicas_moved: int = 0
    leaders_changed: int = 0
    partitions: int = 0
    #: partition -> how many new replicas it gets (each a full copy).
    copies: dict[Partition, int] = field(default_factory=dict)
    bytes_moved: int = 0

    def sizes_of(self, sizes: Mapping[Partition, int]) -> list[int]:
        return [sizes.get(tp, 0) * count for tp, count in self.copies.items()]


def target_assignment(current: Mapping[Partition, tuple[int, ...]], racks: Mapping[int, str | None],
                      leaving: Collection[int]) -> Moves:
    """Drain `leaving`, then balance over the rest: the reassignment, per topic, of every topic that changes.
    Raises PlacementRefused."""
    drained = drain(current, racks, leaving) if leaving else dict(current)
    staying = {b: r for b, r in racks.items() if b not in leaving}
    balanced = balance(drained, staying)
    moves = Moves()
    changed: set[str] = set()
    for tp, replicas in balanced.items():
        if replicas == current[tp]:
            continue
        changed.add(tp[0])
        added = len(set(replicas) - set(current[tp]))
        moves.replicas_moved += added
        moves.leaders_changed += replicas[0] != current[tp][0]
        if added:
            moves.copies[tp] = added
    moves.partitions = len(moves.copies)
    partitions: dict[str, int] = {}
    for topic, partition in balanced:
        partitions[topic] = max(partitions.get(topic, 0), partition + 1)
    for topic in sorted(changed):
        moves.targets[topic] = tuple(balanced[(topic, p)] for p in range(partitions[topic]))
    return moves


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
