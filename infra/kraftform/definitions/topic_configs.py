"""Kafka 4 topic configuration keys: their types, bounds and defaults, and the one normalizer.

Every comparison between a spec and a cluster goes through `normalize_topic_config`, so `7`, `"7"` and
`7d` for a `.ms` key mean what Kafka means, and a value equal to the default is recognisably the default.
Unknown keys are errors with a suggestion: a typo such as `retention.mss` would otherwise be applied by
nobody and noticed by nobody.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from kraftform.units import parse_duration_ms, parse_size

ConfigType = Literal["int", "long", "double", "bool", "enum", "list", "string"]
INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1

#: A topic's throttled replicas, set by kraftform only while its replicas move (`kafka/apply.py`).
THROTTLED_REPLICAS = ("leader.replication.throttled.replicas", "follower.replication.throttled.replicas")


@dataclass(frozen=True)
class ConfigKey:
    """What Kafka accepts for one topic config key; `default` is Kafka's own, in its string form."""

    name: str
    type: ConfigType
    default: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()


def _k(name: str, type_: ConfigType, default: str, minimum: float | None = None,
       maximum: float | None = None, choices: tuple[str, ...] = ()) -> ConfigKey:
    return ConfigKey(name, type_, default, minimum, maximum, choices)


TOPIC_CONFIG_KEYS: Mapping[str, ConfigKey] = {k.name: k for k in (
    _k("cleanup.policy", "list", "delete", choices=("compact", "delete")),
    _k("compression.type", "enum", "producer",
       choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    _k("compression.gzip.level", "int", "-1", -1, 9),
    _k("compression.lz4.level", "int", "9", 1, 17),
    _k("compression.zstd.level", "int", "3", -131072, 22),
    _k("delete.retention.ms", "long", "86400000", 0),
    _k("file.delete.delay.ms", "long", "60000", 0),
    _k("flush.messages", "long", str(LONG_MAX), 1),
    _k("flush.ms", "long", str(LONG_MAX), 0),
    _k("follower.replication.throttled.replicas", "list", ""),
    _k("index.interval.bytes", "int", "4096", 0),
    _k("leader.replication.throttled.replicas", "list", ""),
    _k("local.retention.bytes", "long", "-2", -2),
    _k("local.retention.ms", "long", "-2", -2),
    _k("max.compaction.lag.ms", "long", str(LONG_MAX), 1),
    _k("max.message.bytes", "int", "1048588", 0),
    _k("message.timestamp.after.max.ms", "long", "3600000", 0),
    _k("message.timestamp.before.max.ms", "long", str(LONG_MAX), 0),
    _k("message.timestamp.type", "enum", "CreateTime", choices=("CreateTime", "LogAppendTime")),
    _k("min.cleanable.dirty.ratio", "double", "0.5", 0, 1),
    _k("min.compaction.lag.ms", "long", "0", 0),
    _k("min.insync.replicas", "int", "1", 1),
    _k("preallocate", "bool", "false"),
    _k("remote.log.copy.disable", "bool", "false"),
    _k("remote.log.delete.on.disable", "bool", "false"),
    _k("remote.storage.enable", "bool", "false"),
    _k("retention.bytes", "long", "-1", -1),
    _k("retention.ms", "long", "604800000", -1),
    _k("segment.bytes", "int", "1073741824", 1048576),
    _k("segment.index.bytes", "int", "10485760", 4),
    _k("segment.jitter.ms", "long", "0", 0),
    _k("segment.ms", "long", "604800000", 1),
    _k("unclean.leader.election.enable", "bool", "false"),
)}

ConfigValue = str | int | float | bool | list[str]


def _integer(key: ConfigKey, value: ConfigValue) -> int:
    if isinstance(value, bool | list):
        raise ValueError(f"expected an integer, got {value!r}")
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"expected an integer, got {value!r}")
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text)
        except ValueError:
            pass
        # Units are offered only where the key's name says what the number measures.
        if key.name.endswith(".ms"):
            return parse_duration_ms(text)
        if key.name.endswith(".bytes"):
            return parse_size(text)
        raise ValueError(f"expected an integer, got {value!r}")
    return value


def _num(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else repr(float(number))


def _check_range(key: ConfigKey, number: float) -> None:
    upper = key.maximum if key.maximum is not None else (INT_MAX if key.type == "int" else LONG_MAX)
    if key.minimum is not None and number < key.minimum:
        raise ValueError(f"must be at least {_num(key.minimum)}, got {_num(number)}")
    if number > upper:
        raise ValueError(f"must be at most {_num(upper)}, got {_num(number)}")


def normalize_value(key: ConfigKey, value: ConfigValue) -> str:
    """The string Kafka would report for `value`; raises ValueError with a message for the user."""
    if key.type in ("int", "long"):
        number = _integer(key, value)
        _check_range(key, number)
        return str(number)
    if key.type == "double":
        if isinstance(value, bool | list):
            raise ValueError(f"expected a number, got {value!r}")
        try:
            real = float(value)
        except ValueError:
            raise ValueError(f"expected a number, got {value!r}") from None
        if not math.isfinite(real):
            raise ValueError(f"expected a finite number, got {value!r}")
        _check_range(key, real)
        return repr(real)
    if key.type == "bool":
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower()
        raise ValueError(f"expected true or false, got {value!r}")
    if key.type == "enum":
        if not isinstance(value, str) or value.strip() not in key.choices:
            raise ValueError(f"expected one of {', '.join(key.choices)}, got {value!r}")
        return value.strip()
    if key.type == "list":
        items = value if isinstance(value, list) else str(value).split(",")
        if not all(isinstance(i, str | int) and not isinstance(i, bool) for i in items):
            raise ValueError(f"expected a list of strings, got {value!r}")
        cleaned = [str(i).strip() for i in items if str(i).strip()]
        if key.choices:
            bad = [i for i in cleaned if i not in key.choices]
            if bad:
                raise ValueError(f"expected values among {', '.join(key.choices)}, got {', '.join(bad)}")
            if not cleaned:
                raise ValueError("expected at least one value")
            # Kafka treats cleanup.policy as a set; sort so `delete,compact` equals `compact,delete`.
            cleaned = sorted(set(cleaned))
        return ",".join(cleaned)
    if isinstance(value, list | dict):
        raise ValueError(f"expected a string, got {value!r}")
    return str(value)


def suggest_key(name: str) -> str:
    """A hint naming the closest known key, or an empty string."""
    close = difflib.get_close_matches(name, TOPIC_CONFIG_KEYS, n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


def normalize_topic_config(key_name: str, value: ConfigValue) -> str:
    """Normalize one spec entry; raises ValueError naming the problem, for an unknown key too."""
    key = TOPIC_CONFIG_KEYS.get(key_name)
    if key is None:
        raise ValueError(f"unknown topic config {key_name!r}{suggest_key(key_name)}")
    return normalize_value(key, value)


def kafka_default(key_name: str) -> str | None:
    """Kafka's built-in default for a topic config key, before any broker-level override."""
    key = TOPIC_CONFIG_KEYS.get(key_name)
    return key.default if key else None
