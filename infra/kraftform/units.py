"""Human-friendly sizes, durations and rates in specs, turned into the integers Kafka uses.

Reviewers read `retention.ms: 7d` faster than `604800000`; Kafka only understands the latter. Parsing
lives here so specs, sizing and config normalization agree on one meaning of "GB" (decimal) and "GiB"
(binary).
"""

from __future__ import annotations

import math
import re

_SIZE_UNITS = {
    "": 1, "b": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}
_DURATION_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}

_NUMBER = r"(\d+(?:\.\d+)?)"
SIZE_PATTERN = re.compile(rf"^{_NUMBER}\s*([kKmMgGtT]i?[bB]|[bB])?$")
RATE_PATTERN = re.compile(rf"^{_NUMBER}\s*([kKmMgGtT]i?[bB]|[bB])/s$")
DURATION_PATTERN = re.compile(rf"^{_NUMBER}\s*(ms|s|m|h|d|w)$")


def _whole(value: float, text: str) -> int:
    if not math.isfinite(value) or value != int(value):
        raise ValueError(f"{text!r} is not a whole number of the base unit")
    return int(value)


def _parse(value: int | str, pattern: re.Pattern[str], units: dict[str, int], what: str, examples: str) -> int:
    """An integer as is, or a number with a unit from `units` (looked up lower-case)."""
    if isinstance(value, bool):
        raise ValueError(f"expected {what}, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float):  # JSON Schema counts 2.0 as an integer, so YAML's `2.0` gets here
        return _whole(value, str(value))
    match = pattern.match(value.strip())
    if not match:
        raise ValueError(f"{value!r} is not {what} (examples: {examples})")
    number, unit = match.groups()
    return _whole(float(number) * units[(unit or "").lower()], value)


def parse_size(value: int | str) -> int:
    """Bytes from an integer or a string like `500GiB`, `1.5 TB`, `1048576`."""
    return _parse(value, SIZE_PATTERN, _SIZE_UNITS, "a size", "1048576, 512MiB, 2GB")


def parse_rate(value: int | str) -> int:
    """Bytes per second from an integer or a string like `40MB/s`."""
    return _parse(value, RATE_PATTERN, _SIZE_UNITS, "a rate", "10485760, 10MB/s, 1GiB/s")


def parse_duration_ms(value: int | str) -> int:
    """Milliseconds from an integer or a string like `7d`, `12h`, `500ms`."""
    return _parse(value, DURATION_PATTERN, _DURATION_UNITS_MS, "a duration", "604800000, 7d, 12h, 30m, 500ms")


def human_bytes(n: float) -> str:
    """Binary units with three significant figures, for tables."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def human_duration_ms(ms: int) -> str:
    """The largest unit that divides exactly, so `604800000` reads as `7d` in plans."""
    if ms <= 0:
        return str(ms)
    for unit, factor in sorted(_DURATION_UNITS_MS.items(), key=lambda item: -item[1]):
        if ms % factor == 0:
            return f"{ms // factor}{unit}"
    return f"{ms}ms"


def go_duration(seconds: int) -> str:
    """Whole seconds as Go's `time.Duration.String()` writes them (`5s`, `4m0s`, `1h0m0s`): the form the Docker
    provider reads a container's health-check durations back in, so an input in any other form (`240s`) differs
    from the state after every refresh and `pulumi preview --expect-no-changes` fails."""
    if seconds < 0:
        raise ValueError(f"a negative duration: {seconds}")
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"
