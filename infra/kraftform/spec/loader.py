"""A spec directory -> a validated `SpecSet`, or one `SpecError` listing every problem.

Phases run in order and each reports all it finds: YAML syntax, then JSON Schema, then building the typed
model (value normalization), then cross-reference checks. A later phase runs only when the earlier ones
are clean, because its checks would otherwise repeat the same mistake in other words.
"""

from __future__ import annotations

from pathlib import Path

from kraftform.errors import Location, Problem, SpecError, UsageError
from kraftform.spec.build import build_specset
from kraftform.spec.checks import check_specset
from kraftform.spec.model import SpecSet
from kraftform.spec.schema import validate_document
from kraftform.spec.yamlsource import SourceDoc, parse_yaml

SPEC_SUFFIXES = (".yaml", ".yml")


def spec_files(specs_dir: Path) -> list[Path]:
    """YAML files below the directory, sorted, skipping hidden folders (such as .git)."""
    return sorted(
        p for p in specs_dir.rglob("*")
        if p.suffix in SPEC_SUFFIXES and p.is_file()
        and not any(part.startswith(".") for part in p.relative_to(specs_dir).parts)
    )


def load_documents(specs_dir: Path) -> list[SourceDoc]:
    """Parse and schema-check every file; raise with all problems of both phases."""
    if not specs_dir.is_dir():
        raise UsageError(f"{specs_dir}: not a directory of spec files")
    files = spec_files(specs_dir)
    if not files:
        raise SpecError([Problem(Location(str(specs_dir)), "no .yaml or .yml spec files found")])
    docs: list[SourceDoc] = []
    problems: list[Problem] = []
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(Problem(Location(str(path)), f"cannot read: {exc}"))
            continue
        doc, found = parse_yaml(text, str(path))
        problems.extend(found)
        if doc is not None:
            problems.extend(validate_document(doc))
            docs.append(doc)
    if problems:
        raise SpecError(problems)
    return docs


def load_specs(specs_dir: str | Path) -> SpecSet:
    """The validated model of a spec directory; raises SpecError or UsageError."""
    docs = load_documents(Path(specs_dir))
    specset, problems = build_specset(docs)
    if problems or specset is None:
        raise SpecError(problems)
    problems = check_specset(specset)
    if problems:
        raise SpecError(problems)
    return specset
