"""The commands the README and docs/ tell users to type: every `kraftform` command line in them parses, and
the Pulumi recipes do their steps in an order that works."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from kraftform.cli import build_parser

from ..conftest import REPO

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELL_END = re.compile(r"\s(?:\||&&|&|;|>|2>|#)(?:\s|$)|[`']|$")


def code_blocks(path: Path) -> list[str]:
    return re.findall(r"```(?:sh|yaml)\n(.*?)```", path.read_text(), re.S)


def kraftform_commands(path: Path) -> list[str]:
    """Each `kraftform ...` invocation in a document's code blocks, up to the end of its shell command."""
    found = []
    for block in code_blocks(path):
        for match in re.finditer(r"(?:^|[\s/])kraftform ((?:validate|size|profile|lint|diff|plan|apply|import|cluster"
                                 r"|images|passwords|stack|consumers)\b[^\n]*)", block):
            found.append(SHELL_END.split(match.group(1), maxsplit=1)[0].strip())
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_documented_kraftform_command_parses(doc: Path) -> None:
    parser = build_parser()
    for command in kraftform_commands(doc):
        # A synopsis' optional parts ([--flag VALUE]) are checked as if given.
        args = parser.parse_args(shlex.split(command.replace("[", "").replace("]", "")))
        assert callable(args.handler), command


def test_the_docs_document_commands_at_all() -> None:
    assert len([c for doc in DOCS for c in kraftform_commands(doc)]) >= 15


def test_the_prod_recipe_writes_the_ca_before_pulumi_reads_it() -> None:
    prod = next(b for b in code_blocks(REPO / "docs" / "pulumi.md") if "pulumi stack init prod" in b).splitlines()
    writes_ca = next(i for i, line in enumerate(prod) if re.search(r"\s(?:>\s*)?ca\.pem\b", line))
    assert writes_ca < next(i for i, line in enumerate(prod) if line.startswith("pulumi preview"))


def test_the_dev_recipe_gets_admin_client_files_after_up_and_plans_with_them() -> None:
    dev = next(b for b in code_blocks(REPO / "docs" / "pulumi.md") if "pulumi stack init dev" in b).splitlines()
    up = max(i for i, line in enumerate(dev) if line.startswith("pulumi up"))
    files = next(i for i, line in enumerate(dev) if "kraftform stack client-files" in line)
    plan = next(i for i, line in enumerate(dev) if "kraftform plan" in line)
    assert up < files < plan and "--show-secrets" in dev[files]


def test_the_architecture_and_the_readme_name_every_module() -> None:
    """docs/architecture.md has a row for each module, the README's layout names each (as `name.py` at the top,
    by its name within its package's lines), and neither names a module that is gone."""
    package = REPO / "infra" / "kraftform"
    modules = sorted(p.relative_to(package.parent) for p in package.rglob("*.py"))
    architecture = (REPO / "docs" / "architecture.md").read_text()
    rows = set(re.findall(r"^\| `(kraftform/[\w/]+\.py)` \|", architecture, re.M))
    assert rows == {str(m) for m in modules}
    readme = (REPO / "README.md").read_text()
    layout = readme[readme.index("## Layout"):readme.index("    specs/ ")]
    lines: dict[str, str] = {}
    current = ""
    for line in layout.splitlines():
        opened = re.match(r"      (\w+)/\s", line)
        current = opened[1] if opened else (current if line.startswith("                           ") else "")
        if current:
            lines[current] = lines.get(current, "") + line
    missing = []
    for module in modules:
        parts = module.parts[1:]
        if parts[-1] in ("__init__.py", "__main__.py"):
            continue
        if len(parts) == 1:
            found = f"      {parts[0]} " in layout
        else:
            found = re.search(rf"\b{module.stem}\b", lines.get(parts[0], "")) is not None
        if not found:
            missing.append(str(module))
    assert missing == [], f"not in the README's layout: {missing}"
