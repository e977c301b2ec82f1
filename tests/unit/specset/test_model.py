"""Constants of the spec model whose values carry a property of their own."""

from __future__ import annotations

from kraftform.specset.model import RESERVED_USERS, SCRAM_ANCHORS

from ...conftest import java_hashmap_order, java_string_hash


def test_java_string_hash_matches_known_values() -> None:
    assert java_string_hash("") == 0
    assert java_string_hash("a") == 97
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("kraftform-admin") != 0
    # As `java H.java` printed for these keys (a HashMap's keySet, the admin put first).
    assert java_hashmap_order(["kraftform-admin", "churn-0"]) == ["churn-0", "kraftform-admin"]
    assert java_hashmap_order(["admin", "alice"]) == ["admin", "alice"]


def test_each_scram_anchor_hashes_to_0_so_a_java_hashmap_meets_it_first_at_every_size() -> None:
    """HashMap's bucket is (h ^ h >>> 16) & (size - 1): 0 for every size when h is 0."""
    assert set(SCRAM_ANCHORS) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
    for name in SCRAM_ANCHORS.values():
        assert java_string_hash(name) == 0, name
        assert name in RESERVED_USERS
