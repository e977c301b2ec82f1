"""A spec directory -> a validated `SpecSet`, or one `SpecError` listing every problem.

Phases run in order and each reports all it finds: YAML syntax, then JSON Schema, then building the typed
model (value normalization), then cross-reference checks. Entries that fail the schema are set aside and
the rest goes on through the later phases (specset/partial.py), so one run reports every problem; the model is
built only when every file parses. A value the model cannot take (a misspelt feature, a size that does not
parse) is reported and left out of it, and the cross-reference checks still run on the rest: a check that
lands on the same line only restates that problem and is dropped.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from kraftform.errors import Location, Problem, SpecError, UsageError
from kraftform.specset.build import build_specset
from kraftform.specset.checks import Check, check_specset
from kraftform.specset.files import spec_files
from kraftform.specset.model import SpecSet
from kraftform.specset.partial import SetAside, consequences_removed, valid_part
from kraftform.specset.schema import schema_errors
from kraftform.specset.yamlsource import SourceDoc, parse_yaml


def load_documents(specs_dir: Path) -> list[SourceDoc]:
    """Parse and schema-check every file; raise with all problems of both phases."""
    docs, problems, _ = _read(specs_dir)
    if problems:
        raise SpecError(problems)
    return docs


def _read(specs_dir: Path) -> tuple[list[SourceDoc], list[Problem], SetAside | None]:
    """Every parsed file (schema-invalid entries set aside), the problems so far, and what was set aside
    (None when a file did not parse: nothing can then be said about what it declares)."""
    if not specs_dir.is_dir():
        raise UsageError(f"{specs_dir}: not a directory of spec files")
    files = spec_files(specs_dir)
    if not files:
        raise SpecError([Problem(Location(str(specs_dir)), "no .yaml or .yml spec files found")])
    docs: list[SourceDoc] = []
    problems: list[Problem] = []
    aside: SetAside | None = SetAside()
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(Problem(Location(str(path)), f"cannot read: {exc}"))
            aside = None
            continue
        doc, found = parse_yaml(text, str(path))
        problems.extend(found)
        if doc is None:
            aside = None
            continue
        errors = schema_errors(doc)
        problems.extend(problem for _, problem in errors)
        valid = valid_part(doc, (where for where, _ in errors), aside or SetAside())
        if valid is not None:
            docs.append(valid)
    return docs, problems, aside


def load_specs(specs_dir: str | Path, more: Iterable[Check] = ()) -> SpecSet:
    """The validated model of a spec directory, checked by the model's own rules and `more` (the layers
    above add theirs: `kraftform.declared.load_specs` is what commands call); raises SpecError or UsageError."""
    docs, problems, aside = _read(Path(specs_dir))
    if aside is None or aside.cluster or not docs:
        raise SpecError(problems)  # a file that does not parse, or no cluster to build on: stop here
    specset, found = build_specset(docs)
    if specset is None:
        raise SpecError(problems + consequences_removed(found, aside))
    # The model leaves out each value building refused, so the checks still judge everything else; a check
    # that lands where building already spoke only restates it.
    refused = {(p.location.file, p.location.line) for p in found}
    checked = [p for p in check_specset(specset, more) if (p.location.file, p.location.line) not in refused]
    problems += consequences_removed([*found, *checked], aside)
    if problems:
        raise SpecError(problems)
    return specset
