"""Group settings judged by the pinned Kafka's own definitions and the brokers' bounds: pure."""

from __future__ import annotations

from kraftform.definitions.group_configs import bounds_problem, check_group_setting


def test_a_setting_is_one_kafka_has_with_a_value_it_takes() -> None:
    assert check_group_setting("consumer.session.timeout.ms", "50000") is None
    assert check_group_setting("share.isolation.level", "read_committed") is None
    assert check_group_setting("share.auto.offset.reset", "by_duration:PT1H30M") is None
    assert check_group_setting("consumer.sesion.timeout.ms", "1") == (
        "consumer.sesion.timeout.ms is not a group setting of Kafka; did you mean consumer.session.timeout.ms?")
    assert check_group_setting("share.isolation.level", "dirty") == (
        "share.isolation.level takes one of read_committed, read_uncommitted, got dirty")
    assert check_group_setting("share.auto.offset.reset", "by_duration:P") is not None
    assert check_group_setting("share.record.lock.duration.ms", "500") == (
        "share.record.lock.duration.ms takes [1000,...], got 500")


def test_a_timeout_outside_the_brokers_bounds_is_refused_as_kafka_would_and_broker_config_widens_them() -> None:
    said = bounds_problem("consumer.session.timeout.ms", "30000", {})
    assert said is not None and "group.consumer.min.session.timeout.ms=45000" in said
    assert bounds_problem("consumer.session.timeout.ms", "30000", {"group.consumer.min.session.timeout.ms": "20000"}) \
        is None
    assert bounds_problem("share.auto.offset.reset", "earliest", {}) is None  # not a number: no bounds
    assert bounds_problem("streams.num.standby.replicas", "3", {}) is None  # no broker bounds for it
