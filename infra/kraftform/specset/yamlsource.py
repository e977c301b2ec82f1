"""YAML loading that remembers where every value came from.

PyYAML's plain `safe_load` forgets line numbers and silently keeps the last of duplicated keys; both
would make spec errors hard to act on. Here we compose the node tree ourselves, construct the data with
the safe constructor, and record the position of every mapping key and sequence item by JSON path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from kraftform.errors import Location, Problem

PathPart = str | int
JsonPath = tuple[PathPart, ...]


def format_path(path: JsonPath) -> str:
    """Render a path as `$.topics[3].config["retention.ms"]`: keys with dots stay unambiguous."""
    out = "$"
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.replace("_", "a").replace("-", "a").isalnum() and part[:1].isalpha():
            out += f".{part}"
        else:
            out += f'["{_escaped(part)}"]'
    return out


def _escaped(key: str) -> str:
    """Quotes and backslashes escaped, and anything unprintable as \\uXXXX: a key holding a control
    character must not break the one-line error it appears in."""
    return "".join("\\" + ch if ch in '"\\' else ch if ch.isprintable() else f"\\u{ord(ch):04x}" for ch in key)


@dataclass(frozen=True)
class SourceDoc:
    """A parsed YAML document and the positions of its values."""

    file: str
    data: Any
    positions: Mapping[JsonPath, tuple[int, int]] = field(default_factory=dict)

    def locate(self, path: JsonPath) -> Location:
        """The nearest recorded position at or above `path` (a missing key points at its parent)."""
        probe = tuple(path)
        while probe not in self.positions and probe:
            probe = probe[:-1]
        line, column = self.positions.get(probe, (1, 1))
        return Location(self.file, line, column, format_path(tuple(path)))


def _mark(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _walk(node: yaml.Node, path: JsonPath, positions: dict[JsonPath, tuple[int, int]],
          problems: list[Problem], file: str, seen: set[int]) -> None:
    # Aliases share node objects; walking one twice would loop on recursive anchors.
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        keys: dict[object, yaml.Node] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *anchor` merges; the constructor expands it
            plain = isinstance(key_node, yaml.ScalarNode) and key_node.tag == "tag:yaml.org,2002:str"
            key = key_node.value if plain else None
            if key is None:
                line, col = _mark(key_node)
                problems.append(Problem(Location(file, line, col, format_path(path)), "mapping keys must be "
                                        "strings (quote numbers, booleans and nulls used as keys)"))
                continue
            child = (*path, str(key))
            if key in keys:
                line, col = _mark(key_node)
                first_line, _ = _mark(keys[key])
                problems.append(Problem(Location(file, line, col, format_path(child)),
                                        f"duplicate key {key!r} (first defined on line {first_line})"))
                continue
            keys[key] = key_node
            positions[child] = _mark(key_node)
            _walk(value_node, child, positions, problems, file, seen)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = (*path, index)
            positions[child] = _mark(item)
            _walk(item, child, positions, problems, file, seen)


def _parse_fast(text: str, file: str) -> SourceDoc | None:
    """libyaml's C parser, ten times faster on specs with thousands of topics. Any trouble returns None,
    and the pure-Python parser below (whose messages the problem reports are written for) runs instead."""
    try:
        loader = yaml.CSafeLoader(text)
    except Exception:  # whatever the C parser dislikes, the Python one reports precisely
        return None
    try:
        node = loader.get_single_node()
        if node is None:
            return SourceDoc(file, None, {})
        positions: dict[JsonPath, tuple[int, int]] = {(): _mark(node)}
        problems: list[Problem] = []
        _walk(node, (), positions, problems, file, set())
        return None if problems else SourceDoc(file, loader.construct_document(node), positions)
    except Exception:
        return None
    finally:
        loader.dispose()


def parse_yaml(text: str, file: str) -> tuple[SourceDoc | None, list[Problem]]:
    """Parse one YAML document; return it with positions, or the problems that stop it parsing."""
    if getattr(yaml, "__with_libyaml__", False):
        fast = _parse_fast(text, file)
        if fast is not None:
            return fast, []
    problems: list[Problem] = []
    try:
        # The reader rejects control characters as soon as the loader is built, so build it in here.
        loader = yaml.SafeLoader(text)
    except yaml.reader.ReaderError as exc:
        before = text[: exc.position]
        line, col = before.count("\n") + 1, len(before) - (before.rfind("\n") + 1) + 1
        char = chr(exc.character) if isinstance(exc.character, int) else exc.character
        return None, [Problem(Location(file, line, col),
                              f"invalid YAML: character {char!r} is not allowed ({exc.reason})")]
    try:
        node = loader.get_single_node()
        if node is None:
            return SourceDoc(file, None, {}), problems
        positions: dict[JsonPath, tuple[int, int]] = {(): _mark(node)}
        _walk(node, (), positions, problems, file, set())
        if problems:
            return None, problems
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        what = str(exc.problem or exc.context)
        if exc.problem and exc.context:
            opened = exc.context_mark
            # Where an unclosed bracket or quote began is usually the line to fix, not where parsing gave up.
            where = (f" which began at line {opened.line + 1}, column {opened.column + 1}"
                     if opened is not None and opened.line + 1 != line else "")
            what = f"{exc.problem} ({exc.context}{where})"
        return None, [Problem(Location(file, line, col), f"invalid YAML: {what}")]
    except (yaml.YAMLError, RecursionError, ValueError, TypeError, OverflowError) as exc:
        # ValueError and friends come from the constructor (e.g. a timestamp like 2026-13-45).
        return None, [Problem(Location(file), f"invalid YAML: {exc}")]
    finally:
        loader.dispose()
    return SourceDoc(file, data, positions), problems
