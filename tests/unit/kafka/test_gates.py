"""The roll's gates, on the data they read."""

from __future__ import annotations

from kraftform.kafka.gates import blocking, parse_quorum
from kraftform.monitoring.status import Partition


def test_a_broker_in_an_isr_already_at_min_insync_blocks_the_roll_naming_the_partition() -> None:
    partitions = [Partition("orders", 0, (1, 2, 3), (1, 2), 1), Partition("orders", 1, (1, 2, 3), (2, 3), 2),
                  Partition("audit", 0, (1, 2, 3), (1, 2, 3), 1)]
    assert blocking(partitions, {"orders": 2, "audit": 2}, 1) == ["orders-0 (ISR 1,2, min.insync.replicas 2)"]
    assert blocking(partitions, {"orders": 2, "audit": 2}, 3) == ["orders-1 (ISR 2,3, min.insync.replicas 2)"]
    assert blocking(partitions, {"orders": 1, "audit": 2}, 3) == []
    # min.insync.replicas as high as the replicas: any restart takes it below, so it does not hold a roll forever.
    assert blocking(partitions, {"orders": 1, "audit": 3}, 3) == []
    assert blocking([Partition("single", 0, (3,), (3,), 3)], {}, 3) == []


def test_quorum_voters_behind_the_leader_are_not_caught_up() -> None:
    response = {"topics": [{"partitions": [{"leader_id": 1002, "current_voters": [
        {"replica_id": 1001, "last_caught_up_timestamp": 10_000, "last_fetch_timestamp": 10_000},
        {"replica_id": 1002, "last_caught_up_timestamp": 10_500, "last_fetch_timestamp": 10_500},
        {"replica_id": 1003, "last_caught_up_timestamp": 5_000, "last_fetch_timestamp": 9_000,
         "replica_directory_id": "8e052b4b-8d1e-de03-34ea-e608e4f99d05"}]}]}]}
    quorum = parse_quorum(response)
    assert quorum.leader == 1002 and quorum.majority == 2
    assert quorum.caught_up() == {1001, 1002}
    assert quorum.fetched_at[1003] == 9_000  # fetching, but behind
    # A voter's directory id as Kafka's tools take it (remove-controller --controller-directory-id).
    # (the form Kafka printed for this voter: ReplicaKey(id=1005, directoryId=jgUrS40e3gM06uYI5PmdBQ)).
    assert quorum.directories == {1001: "", 1002: "", 1003: "jgUrS40e3gM06uYI5PmdBQ"}
