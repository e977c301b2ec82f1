"""Acknowledged against consumed: what a producer was told is safe, and what a reader found.

A record is lost when the producer got its acknowledgement and no reader ever sees it. A record read but
never acknowledged is not lost (the producer gave up or crashed after the broker wrote it); a record read
twice is a duplicate (a retried send without idempotence).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Delivery:
    acked: int
    read: int
    lost: int
    duplicates: int
    unacked_read: int
    #: A few lost values, for the report (VerifiableProducer's values are its sequence numbers).
    lost_sample: tuple[int, ...] = ()


def account(acked: Collection[int], read: Sequence[int]) -> Delivery:
    counts = Counter(read)
    acked_set = set(acked)
    lost = sorted(acked_set - counts.keys())
    return Delivery(
        acked=len(acked_set), read=len(read), lost=len(lost),
        duplicates=sum(n - 1 for n in counts.values() if n > 1),
        unacked_read=sum(1 for value in counts if value not in acked_set),
        lost_sample=tuple(lost[:5]),
    )
