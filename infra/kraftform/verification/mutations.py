"""Spec sets that are wrong in the ways people get specs wrong, generated from a valid one.

Each generated set applies one to three mutations to the files of a valid spec directory: a value replaced
by one of the wrong type or range, a key deleted, an entry duplicated, an unknown key added, or the YAML
text itself broken at a random place. Seeded, so a failing set can be generated again from its number.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

ODD_VALUES: tuple[Any, ...] = (
    -1, 0, 2**31, 2**63, -(2**63), 10**30, 1.5, float("nan"), float("inf"), "", "x", "-5", "1e400", True, None,
    [1, 2], {"a": 1}, "7d", "1GiB", "10MB/s", "User:*", "<default>", "compact", "\u00e9t\u00e9", "\x1e",
)
JUNK = ("\t", ": :", "- [", "{", "&a *a", "\n  - ", "}", "'", '"', "\x00", "?")
HOW = ("replace", "delete", "duplicate", "unknown_key")


def paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a YAML document, the root included."""
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += paths(v, (*prefix, i))
    return out


def mutate(data: Any, path: tuple[Any, ...], how: str, value: Any) -> Any:
    """`data` with one change at `path` (in place where it can; the new root is returned)."""
    if not path:
        return value if how == "replace" else data
    parent = data
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if how == "replace":
        parent[last] = value
    elif how == "delete":
        del parent[last]
    elif how == "duplicate" and isinstance(parent, list):
        parent.append(parent[last])
    elif how == "unknown_key" and isinstance(parent[last], dict):
        parent[last]["x_unknown"] = value
    return data


@dataclass(frozen=True)
class Mutation:
    file: str
    what: str


def _one(rng: random.Random, files: dict[str, str]) -> Mutation:
    name = rng.choice(sorted(files))
    text = files[name]
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError:
        data = None
    if data is not None and rng.random() < 0.7:
        path = rng.choice(paths(data))
        how = rng.choice(HOW)
        value = rng.choice(ODD_VALUES)
        files[name] = yaml.safe_dump(mutate(data, path, how, value), allow_unicode=True)
        return Mutation(name, f"{how} at {'.'.join(map(str, path)) or '$'} with {value!r}")
    cut = rng.randrange(len(text) + 1)
    junk = rng.choice(JUNK)
    files[name] = text[:cut] + junk + text[cut + rng.randrange(21):]
    return Mutation(name, f"text broken at offset {cut} with {junk!r}")


def mutated_set(base: Mapping[str, str], seed: int) -> tuple[dict[str, str], tuple[Mutation, ...]]:
    """Spec set number `seed`: the files of `base` (relative path -> text) with one to three mutations."""
    rng = random.Random(seed)
    files = dict(base)
    done = tuple(_one(rng, files) for _ in range(rng.randint(1, 3)))
    return files, done
