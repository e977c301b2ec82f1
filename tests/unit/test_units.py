from __future__ import annotations

import pytest

from kraftform.units import go_duration, human_bytes, human_duration_ms, parse_duration_ms, parse_rate, parse_size


@pytest.mark.parametrize(("text", "expected"), [
    (1048576, 1048576), ("1048576", 1048576), ("512MiB", 512 * 2**20), ("2GB", 2 * 10**9),
    ("1.5 TiB", int(1.5 * 2**40)), ("10kb", 10_000), ("7B", 7),
])
def test_parse_size(text: int | str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("7d", 604_800_000), ("12h", 43_200_000), ("30m", 1_800_000), ("500ms", 500), ("2w", 1_209_600_000),
    ("1.5s", 1500), (-1, -1), (86400000, 86400000),
])
def test_parse_duration(text: int | str, expected: int) -> None:
    assert parse_duration_ms(text) == expected


def test_parse_rate() -> None:
    assert parse_rate("10MB/s") == 10_000_000
    assert parse_rate("1GiB/s") == 2**30
    assert parse_rate(123) == 123


@pytest.mark.parametrize(("parse", "bad"), [
    (parse_size, "lots"), (parse_size, "1.5B"), (parse_size, True), (parse_duration_ms, "7 days"),
    (parse_duration_ms, "0.1ms"), (parse_rate, "10MB"), (parse_rate, False),
])
def test_bad_values_raise_value_error_naming_the_value(parse, bad) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=repr(bad) if isinstance(bad, str) else "expected"):
        parse(bad)


def test_human_forms() -> None:
    assert human_duration_ms(604_800_000) == "1w"
    assert human_duration_ms(259_200_000) == "3d"
    assert human_duration_ms(1500) == "1500ms"
    assert human_bytes(512) == "512 B"
    assert human_bytes(3 * 2**30) == "3 GiB"


def test_a_whole_float_from_yaml_is_accepted_and_a_fraction_is_not() -> None:
    # JSON Schema calls 2.0 an integer, so `storage_per_broker: 2.0` passes the schema and reaches here.
    assert parse_size(2.0) == 2  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not a whole number"):
        parse_size(2.5)  # type: ignore[arg-type]


@pytest.mark.parametrize(("seconds", "go"), [(0, "0s"), (5, "5s"), (59, "59s"), (60, "1m0s"), (90, "1m30s"),
                                             (240, "4m0s"), (3600, "1h0m0s"), (3725, "1h2m5s")])
def test_go_duration_writes_what_gos_duration_string_writes(seconds: int, go: str) -> None:
    # Go's time.Duration.String() for whole seconds: the form pulumi-docker reads health-check durations back in.
    assert go_duration(seconds) == go
