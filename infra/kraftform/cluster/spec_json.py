"""A cluster section as plain JSON values and back, for where it has to cross a process boundary as data: the
Pulumi engine hands a dynamic provider its inputs as a protobuf Struct, so the node work `pulumi up` runs is
given the very `ClusterSpec` the CLI would build from the same specs, readable in the stack's state and in a
preview's diff. Where a value came from in the spec files (`location`) does not cross: it is not part of the
cluster's meaning (it is outside equality).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any, TypeVar

from kraftform.specset.model import ClusterSpec

T = TypeVar("T")
_SKIPPED = ("location",)


def to_json(value: Any) -> Any:
    """Dataclasses as objects of their fields, tuples as lists, mappings as objects; the rest as is."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value) if f.name not in _SKIPPED}
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, tuple | list):
        return [to_json(v) for v in value]
    return value


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _from(kind: Any, value: Any) -> Any:
    """`value` read as `kind`; numbers the engine sent as floats become the ints the spec holds."""
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if value is None:
        return None
    if origin in (typing.Union, types.UnionType):
        kinds = [a for a in args if a is not type(None)]
        # A mapping is the union's dataclass (a setting `str | EnvSecret` that is a secret's reference).
        mapping = isinstance(value, Mapping)
        return _from(next((a for a in kinds if dataclasses.is_dataclass(a) == mapping), kinds[0]), value)
    if origin is typing.Literal:
        return value
    if dataclasses.is_dataclass(kind):
        return from_json(kind, value)  # type: ignore[arg-type]
    if origin is tuple:
        return tuple(_from(args[0], v) for v in value)
    if origin in (Mapping, dict) or kind is Mapping:
        return {k: _from(args[1], v) for k, v in value.items()} if args else dict(value)
    if kind is int:
        return int(value)
    if kind is float:
        return float(value)
    return value


def from_json(cls: type[T], data: Mapping[str, Any]) -> T:
    """The dataclass `cls` from `to_json`'s form; fields missing from `data` keep their defaults."""
    hints = _hints(typing.cast(type, cls))
    fields = {f.name: _from(hints[f.name], data[f.name]) for f in dataclasses.fields(cls)  # type: ignore[arg-type]
              if f.name in data and f.name not in _SKIPPED}
    return cls(**fields)


def cluster_to_json(spec: ClusterSpec) -> dict[str, Any]:
    return typing.cast(dict[str, Any], to_json(spec))


def cluster_from_json(data: Mapping[str, Any]) -> ClusterSpec:
    return from_json(ClusterSpec, data)
