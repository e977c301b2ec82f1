"""The changes the node kill trials make, in turn: each differs from the one before, and they alternate a roll
with a broker added or removed."""

from __future__ import annotations

from kraftform.verification.nodework import ROLLED, changes


def test_rolls_alternate_with_a_broker_added_and_removed_each_a_change_from_the_last() -> None:
    cluster = {"name": "p", "brokers": 3, "controllers": 3, "broker_config": {"num.io.threads": "8"}}
    made = changes(cluster, 6)
    assert [what.split(" (")[0] for what, _ in made] == [
        "roll", "brokers 3 -> 4", "roll", "brokers 4 -> 3", "roll", "brokers 3 -> 4"]
    previous = cluster
    for _, section in made:
        assert section != previous
        assert section["broker_config"]["num.io.threads"] == "8"  # the user's own settings stay
        previous = section
    assert len({section["broker_config"][ROLLED] for _, section in made}) == 3
    assert cluster == {"name": "p", "brokers": 3, "controllers": 3, "broker_config": {"num.io.threads": "8"}}
