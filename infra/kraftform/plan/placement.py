"""Where replicas go when a topic's replication factor changes: pure, deterministic, rack-aware.

Existing replicas stay where they are (moving data costs more than anything else here) and the first
replica, the preferred leader, never changes, so leadership stays as balanced as Kafka made it. New
replicas go to a rack the partition does not use yet, then to the broker holding the fewest replicas;
a decrease drops replicas from racks used twice first, then from the busiest brokers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence

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


def balance(assignment: Mapping[Partition, Sequence[int]],
            brokers: Mapping[int, str | None]) -> dict[Partition, tuple[int, ...]]:
    """Replicas moved, one at a time, never narrowing a partition's rack spread: first within each topic, from
    the broker holding the most of its replicas to one holding at least two fewer (a new broker takes its share
    of every topic's load and disk, not only of whatever is cheapest to move); then across topics, where a move
    keeps each topic within one. Ties go to the brokers holding most and fewest replicas overall. Then preferred
    leaders (first replicas) are reordered, which moves no data, until leaders per broker are within one of each
    other where the replicas allow. A broker ends within one replica of those it can trade with (the brokers of
    its rack, when racks hold different numbers of brokers)."""
    current = {tp: list(r) for tp, r in assignment.items()}
    total: Counter[int] = Counter({b: 0 for b in brokers})
    per_topic: dict[str, Counter[int]] = {}
    hosted: dict[tuple[str, int], set[Partition]] = {}
    for tp, replicas in current.items():
        per_topic.setdefault(tp[0], Counter({b: 0 for b in brokers}))
        for b in replicas:
            total[b] += 1
            per_topic[tp[0]][b] += 1
            hosted.setdefault((tp[0], b), set()).add(tp)

    def movable(tp: Partition, over: int, under: int) -> bool:
        replicas = current[tp]
        moved = [under if b == over else b for b in replicas]
        return under not in replicas and spread(moved, brokers) >= spread(replicas, brokers)

    def move(tp: Partition, over: int, under: int) -> None:
        current[tp] = [under if b == over else b for b in current[tp]]
        for counter in (total, per_topic[tp[0]]):
            counter[over] -= 1
            counter[under] += 1
        hosted[(tp[0], over)].discard(tp)
        hosted.setdefault((tp[0], under), set()).add(tp)

    def within_topic(topic: str) -> bool:
        load = per_topic[topic]
        by_load = sorted(brokers, key=lambda b: (-load[b], -total[b], b))
        for over in by_load:
            for under in sorted(brokers, key=lambda b: (load[b], total[b], b)):
                if load[over] - load[under] < 2:
                    break
                tp = next((t for t in sorted(hosted.get((topic, over), ())) if movable(t, over, under)), None)
                if tp is not None:
                    move(tp, over, under)
                    return True
        return False

    def across_topics() -> bool:
        by_load = sorted(brokers, key=lambda b: (-total[b], b))
        for over in by_load:
            for under in reversed(by_load):
                if total[over] - total[under] < 2:
                    break
                for topic in sorted(per_topic):
                    if per_topic[topic][over] - per_topic[topic][under] < 1:
                        continue
                    tp = next((t for t in sorted(hosted.get((topic, over), ())) if movable(t, over, under)), None)
                    if tp is not None:
                        move(tp, over, under)
                        return True
        return False

    for topic in sorted(per_topic):
        while within_topic(topic):
            pass
    while across_topics():
        pass
    leaders = Counter(r[0] for r in current.values())

    def lead_one() -> bool:
        for over in sorted(brokers, key=lambda b: (-leaders[b], b)):
            for tp in sorted(t for t, r in current.items() if r[0] == over):
                replicas = current[tp]
                under = min(replicas[1:], key=lambda b: (leaders[b], b), default=None)
                if under is not None and leaders[over] - leaders[under] >= 2:
                    replicas.remove(under)
                    replicas.insert(0, under)
                    leaders[over] -= 1
                    leaders[under] += 1
                    return True
        return False

    while lead_one():
        pass
    return {tp: tuple(r) for tp, r in current.items()}
