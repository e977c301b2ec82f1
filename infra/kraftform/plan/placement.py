"""Where replicas go when a topic's replication factor changes: pure, deterministic, rack-aware.

Existing replicas stay where they are (moving data costs more than anything else here) and the first
replica, the preferred leader, never changes, so leadership stays as balanced as Kafka made it. New
replicas go to a rack the partition does not use yet, then to the broker holding the fewest replicas;
a decrease drops replicas from racks used twice first, then from the busiest brokers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

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
