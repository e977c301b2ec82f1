"""Benchmark, not a test: replica placement (drain, balance, preferred leaders) at the scale of large clusters.

    python tests/bench/bench_placement.py [--partitions 100000] [--topics 10000] [--brokers 27] [--added 3]

Pure code, no cluster: a layout as Kafka's rack-aware assignment makes it (replication factor 3, three racks,
consecutive brokers of a rack-alternating list from a random start per topic), then the target `kraftform apply
--state-dir` computes for brokers added (`--brokers` -> `--brokers + --added`), for the same number removed again
(drained), for one topic of 20,000 partitions, and for the grown layout again; the first two also with
`placement.even_topics`. Prints the seconds of each, the replicas moved against the lower bound (what any
placement reaching the balance must move), the leaders changed, and the balance reached (the spread of replicas
and of leaders per broker, overall and within the worst topic). Targets: 100,000 partitions on 30 brokers in
under 5 s on two cores (issue 32); moves within 5% of the bound (issue 43).
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter
from collections.abc import Mapping

from kraftform.plan.placement import Partition, target_assignment

RACKS = ("a", "b", "c")


def racks_of(count: int) -> dict[int, str]:
    return {b: RACKS[(b - 1) % len(RACKS)] for b in range(1, count + 1)}


def kafka_layout(topics: int, partitions: int, brokers: int, seed: int = 7) -> dict[Partition, tuple[int, ...]]:
    """Each topic from a random start in the rack-alternating broker list, replicas on consecutive brokers."""
    rng = random.Random(seed)
    alternating = sorted(range(1, brokers + 1), key=lambda b: ((b - 1) // len(RACKS), (b - 1) % len(RACKS)))
    per_topic = max(1, partitions // topics)
    layout: dict[Partition, tuple[int, ...]] = {}
    for t in range(topics):
        start = rng.randrange(brokers)
        for p in range(per_topic):
            layout[(f"t{t:05d}", p)] = tuple(alternating[(start + p + i) % brokers] for i in range(3))
    return layout


def spreads(layout: Mapping[Partition, tuple[int, ...]], brokers: Mapping[int, str]) -> tuple[int, int, int]:
    """(replicas max - min over brokers, leaders max - min, the worst topic's replicas max - min)."""
    replicas = Counter({b: 0 for b in brokers} | Counter(b for r in layout.values() for b in r))
    leaders = Counter({b: 0 for b in brokers} | Counter(r[0] for r in layout.values()))
    by_topic: dict[str, Counter[int]] = {}
    for (topic, _), r in layout.items():
        by_topic.setdefault(topic, Counter({b: 0 for b in brokers})).update(r)
    worst = max(max(c.values()) - min(c.values()) for c in by_topic.values())
    return (max(replicas.values()) - min(replicas.values()), max(leaders.values()) - min(leaders.values()), worst)


def run(label: str, layout: dict[Partition, tuple[int, ...]], brokers: dict[int, str], leaving: set[int],
        even_topics: bool = False) -> dict[Partition, tuple[int, ...]]:
    """Times the target for `layout`; returns the layout it leads to."""
    started = time.monotonic()
    moves = target_assignment(layout, brokers, leaving, even_topics=even_topics)
    seconds = time.monotonic() - started
    after = dict(layout)
    for topic, target in moves.targets.items():
        after.update({(topic, p): replicas for p, replicas in enumerate(target)})
    staying = {b: r for b, r in brokers.items() if b not in leaving}
    replicas, leaders, worst = spreads(after, staying)
    excess = moves.replicas_moved / moves.bound.replicas - 1 if moves.bound.replicas else 0.0
    print(f"| {label} | {len(layout):,} | {'yes' if even_topics else 'no'} | {seconds:.2f} | "
          f"{moves.replicas_moved:,} | {moves.bound.replicas:,} | {excess:+.1%} | {moves.leaders_changed:,} | "
          f"{replicas} | {leaders} | {worst} |", flush=True)
    return after


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--topics", type=int, default=10_000)
    parser.add_argument("--brokers", type=int, default=27)
    parser.add_argument("--added", type=int, default=3)
    args = parser.parse_args()
    bigger = args.brokers + args.added
    print("| change | partitions | even_topics | seconds | replicas moved | lower bound | above it | leaders changed "
          "| replica spread | leader spread | worst topic's spread |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    layout = kafka_layout(args.topics, args.partitions, args.brokers)
    wide = kafka_layout(args.topics, args.partitions, bigger)
    leaving = set(range(args.brokers + 1, bigger + 1))
    grown = run(f"{args.brokers} -> {bigger} brokers, {args.topics:,} topics", layout, racks_of(bigger), set())
    run(f"{bigger} -> {args.brokers} brokers (drain), {args.topics:,} topics", wide, racks_of(bigger), leaving)
    run(f"{args.brokers} -> {bigger} brokers, {args.topics:,} topics", layout, racks_of(bigger), set(), True)
    run(f"{bigger} -> {args.brokers} brokers (drain), {args.topics:,} topics", wide, racks_of(bigger), leaving, True)
    one = kafka_layout(1, 20_000, args.brokers)
    run(f"{args.brokers} -> {bigger} brokers, 1 topic", one, racks_of(bigger), set())
    run(f"the grown layout again, {bigger} brokers (moves nothing)", grown, racks_of(bigger), set())


if __name__ == "__main__":
    main()
