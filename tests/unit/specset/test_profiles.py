from __future__ import annotations

from kraftform.specset.model import Profile
from kraftform.specset.profiles import BUILTIN_PROFILES, merge_profile


def test_builtin_profiles_carry_the_course_settings() -> None:
    t, lat, d = BUILTIN_PROFILES["throughput"], BUILTIN_PROFILES["latency"], BUILTIN_PROFILES["durability"]
    assert (t.producer["batch.size"], t.producer["linger.ms"], t.producer["compression.type"],
            t.producer["acks"], t.consumer["fetch.min.bytes"]) == ("262144", "100", "lz4", "1", "100000")
    assert (lat.producer["linger.ms"], lat.producer["compression.type"], lat.producer["acks"],
            lat.consumer["fetch.min.bytes"]) == ("0", "none", "1", "1")
    assert int(lat.broker["num.replica.fetchers"]) > 1
    assert d.replication_factor == 3
    assert (d.topic["min.insync.replicas"], d.topic["unclean.leader.election.enable"]) == ("2", "false")
    assert (d.producer["acks"], d.producer["enable.idempotence"]) == ("all", "true")
    assert int(d.producer["max.in.flight.requests.per.connection"]) <= 5
    assert d.consumer["isolation.level"] == "read_committed"
    assert BUILTIN_PROFILES["balanced"].topic == {}


def test_acks_one_never_claims_idempotence() -> None:
    # Kafka rejects enable.idempotence=true with acks other than all.
    for profile in BUILTIN_PROFILES.values():
        if profile.producer.get("acks") != "all":
            assert profile.producer.get("enable.idempotence") == "false", profile.name


def test_merge_overrides_key_by_key() -> None:
    base = BUILTIN_PROFILES["durability"]
    merged = merge_profile(base, Profile(name="x", topic={"retention.ms": "1"}, producer={"linger.ms": "7"}))
    assert merged.name == "x" and merged.replication_factor == 3
    assert merged.topic == {**base.topic, "retention.ms": "1"}
    assert merged.producer["linger.ms"] == "7" and merged.producer["acks"] == "all"
