"""The schema-valid part of a spec set, so cross-reference checks still run when some entries are invalid.

A user with four schema errors and an unknown principal wants all five in one run. Building the model
needs schema-valid input, so the entries (or sections) a schema error points into are set aside; the
rest is checked as usual. Problems that only restate a set-aside entry's absence ("unknown topic 'x'"
when topic x was set aside) are dropped: the schema error about x already says what to fix.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kraftform.errors import Problem
from kraftform.specset.yamlsource import JsonPath, SourceDoc


@dataclass
class SetAside:
    """What was left out of the valid part: names whose absence must not be reported, and whether the
    cluster section itself was, in which case nothing downstream can be built."""

    names: set[str] = field(default_factory=set)
    cluster: bool = False

    def note(self, section: object, value: Any) -> None:
        if section == "cluster":
            self.cluster = True
        items = value if isinstance(value, list) else [value]
        self.names.update(i["name"] for i in items if isinstance(i, dict) and isinstance(i.get("name"), str))

    def explains(self, problem: Problem) -> bool:
        """Whether `problem` is only a consequence of something set aside (it names it)."""
        return any(f"'{n}'" in problem.message or f"'User:{n}'" in problem.message for n in self.names)


#: Stands in for a list entry that was set aside, so the entries after it keep their index (and with it
#: their JSON path and line in every later message); `build.entries` skips it.
SET_ASIDE = object()


def valid_part(doc: SourceDoc, invalid: Iterable[JsonPath], aside: SetAside) -> SourceDoc | None:
    """`doc` without the list entries or sections that `invalid` paths point into (None: nothing left)."""
    data = doc.data
    paths = list(invalid)
    if not paths:
        return doc
    if not isinstance(data, dict) or any(len(p) == 0 for p in paths):
        for section, value in (data.items() if isinstance(data, dict) else []):
            aside.note(section, value)
        return None
    kept = dict(data)
    for path in paths:
        section = path[0]
        value = kept.get(section)
        if len(path) >= 2 and isinstance(path[1], int) and isinstance(value, list):
            if value[path[1]] is not SET_ASIDE:
                aside.note(section, [value[path[1]]])
                kept[section] = [SET_ASIDE if i == path[1] else v for i, v in enumerate(value)]
        elif section in kept:
            aside.note(section, kept.pop(section))
    return SourceDoc(doc.file, kept, doc.positions)


def consequences_removed(problems: Sequence[Problem], aside: SetAside) -> list[Problem]:
    return [p for p in problems if not aside.explains(p)]
