"""What the observer makes of kafka-python's answers, pure."""

from __future__ import annotations

from kraftform.kafka.kafka_python import quiet
from kraftform.kafka.observe import _kafka_reason

with quiet():
    from kafka.errors import InvalidUpdateVersionError

#: kafka-python's text for a refused UpdateFeatures, as Kafka 4.3.1 answered a validate-only kraft.version 1 -> 0.
REFUSED = ("Request 'UpdateFeaturesRequest(version=2, timeout_ms=60000, feature_updates=[FeatureUpdateKey("
           "feature='kraft.version', max_version_level=0, allow_downgrade=True, upgrade_type=2)], validate_only=True)'"
           " failed with response 'UpdateFeaturesResponse(version=2, throttle_time_ms=0, error_code=95, error_message="
           "\"The update failed for all features since the following feature had an error: Invalid update version 0 "
           "for feature kraft.version. Can't downgrade the version of this feature.\")'.")


def test_a_refused_feature_update_is_said_in_kafkas_words_without_the_request_dump() -> None:
    assert _kafka_reason(InvalidUpdateVersionError(REFUSED)) == (
        "Invalid update version 0 for feature kraft.version. Can't downgrade the version of this feature.")
    assert _kafka_reason(InvalidUpdateVersionError("no message")) == "InvalidUpdateVersionError"
