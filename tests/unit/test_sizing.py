from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from kraftform.declared import load_specs
from kraftform.sizing import HEADROOM, size_cluster, suggest_partitions

from ..conftest import SpecsCopy, edit


def test_example_platform_fits_its_declared_cluster(example_specs: Path) -> None:
    r = size_cluster(load_specs(example_specs))
    # 300M msgs/day x 1 KiB x 7 days x RF 3
    assert r.storage_bytes == 300_000_000 * 1024 * 7 * 3
    assert r.brokers_for_storage == math.ceil(r.storage_bytes / (4 * 2**40 * HEADROOM)) == 3
    # 60 MB/s x (4 consumer groups + 2 follower fetches) out, against 70% of 1250 MB/s
    assert r.brokers_for_network == 1
    # 60 MB/s x 3 replicas against 70% of 150 MB/s
    assert r.brokers_for_cpu == math.ceil(180 / 105) == 2
    assert r.brokers_for_replication == 3
    assert r.brokers_needed == 3 and r.controllers_needed == 3
    assert not r.undersized and r.warnings == ()


def test_growth_past_seventy_percent_asks_for_more_brokers(specs_copy: SpecsCopy) -> None:
    specs = specs_copy()
    edit(specs / "cluster.yaml", "messages_per_day: 300000000", "messages_per_day: 600000000")
    edit(specs / "cluster.yaml", "controller_failures_tolerated: 1", "controller_failures_tolerated: 2")
    r = size_cluster(load_specs(specs))
    assert r.brokers_for_storage == math.ceil(600_000_000 * 1024 * 7 * 3 / (4 * 2**40 * HEADROOM)) == 5
    assert r.brokers_needed == 5 and r.controllers_needed == 5
    assert r.undersized
    assert any("declares 3 brokers but needs 5" in w for w in r.warnings)
    assert any("5 are needed to tolerate 2" in w for w in r.warnings)
    assert any("disk would be" in w for w in r.warnings)


def test_partition_suggestions_and_the_usual_ceiling(specs_copy: SpecsCopy) -> None:
    assert suggest_partitions(40_000_000, 10_000_000, 3) == 6
    assert suggest_partitions(1, 10_000_000, 3) == 3
    specs = specs_copy()
    edit(specs / "topics" / "payments.yaml", "expected_write_rate: 8MB/s", "expected_write_rate: 200MB/s")
    edit(specs / "topics" / "clickstream.yaml", "partitions: 24", "partitions: 48")
    r = size_cluster(load_specs(specs))
    tx = next(t for t in r.topics if t.name == "payments.transactions.v1")
    assert tx.suggested_partitions == 21 and tx.write_failures_tolerated == 1
    assert "topic 'payments.transactions.v1' has 12 partitions; its expected write rate needs 21" in r.warnings
    assert any("'clickstream.page-views.v1' has 48 partitions; about 24" in w for w in r.warnings)


def test_without_load_only_replication_and_controllers(specs_copy: SpecsCopy) -> None:
    specs = specs_copy()
    text = (specs / "cluster.yaml").read_text()
    (specs / "cluster.yaml").write_text(text.split("  load:")[0])
    r = size_cluster(load_specs(specs))
    assert (r.storage_bytes, r.brokers_for_storage, r.brokers_for_network, r.brokers_for_cpu) == (None,) * 4
    assert r.brokers_needed == 3


def test_consumers_are_sized_beside_the_brokers(example_specs: Path) -> None:
    specs = load_specs(example_specs)
    r = size_cluster(specs)
    assert [(c.name, c.cores, c.input_partitions, c.tasks, c.exactly_once) for c in r.consumers] == [
        ("fraud-scoring", 2, 24, 24, True), ("clickstream-sessionizer", 2, 24, 24, True)]
    assert r.consumer_cores == 4

    # More cores than partitions: the throughput profile splits partitions so every core has a task; the
    # durability profile does not, and the cores left over are reported.
    wide = dataclasses.replace(specs.consumers[1], cores=32)  # throughput, on 24 partitions
    idle = dataclasses.replace(specs.consumers[0], cores=32)  # durability, on 24 partitions
    r = size_cluster(dataclasses.replace(specs, consumers=(wide, idle)))
    assert [(c.tasks, c.idle_cores) for c in r.consumers] == [(64, 0), (24, 8)]
    assert r.warnings == ("consumer 'fraud-scoring' has 32 cores for 24 tasks per micro-batch: 8 stay idle",)
