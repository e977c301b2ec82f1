"""Pulumi entry point: thin wiring only, the package does the work.

For now the program loads and validates the spec directory (stack config `kraftform:specsDir`, default
`specs/` beside Pulumi.yaml) and exports what it declares; a spec error fails `pulumi preview` with the
same located messages as `kraftform validate`, before any resource is touched.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pulumi

sys.path.insert(0, str(Path(__file__).resolve().parent))  # `kraftform` lives beside this file

from kraftform.errors import KraftformError, SpecError
from kraftform.spec import load_specs

config = pulumi.Config("kraftform")
specs_dir = Path(config.get("specsDir") or Path(__file__).resolve().parents[1] / "specs")

try:
    specs = load_specs(specs_dir)
except SpecError as exc:
    raise pulumi.RunError("invalid specs:\n" + "\n".join(str(p) for p in exc.problems)) from None
except KraftformError as exc:
    raise pulumi.RunError(str(exc)) from None

pulumi.export("cluster", specs.cluster.name)
pulumi.export("topics", sorted(t.name for t in specs.topics))
