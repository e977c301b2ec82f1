"""Layers one way: every module imports on its own, and no module imports (even lazily) one that imports it.

A cycle works only in the order Python happens to meet it (`import kraftform.specset.profiles` once failed while
`import kraftform` worked), so the graph is checked as written, not as one entry point loads it.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

INFRA = Path(__file__).resolve().parents[2] / "infra"


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted((INFRA / "kraftform").rglob("*.py")):
        parts = path.relative_to(INFRA).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """kraftform modules `name` imports anywhere in its body (function-level imports included)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: up (level - 1) packages from this one
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *filter(None, [base])])
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        out |= {t for t in targets if t in modules and t != name}
    return out


def test_the_import_graph_has_no_cycle() -> None:
    modules = _modules()
    graph = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert graph["kraftform.cli"], "the import scan found nothing: it would pass vacuously"
    try:
        list(TopologicalSorter(graph).static_order())
    except CycleError as exc:
        raise AssertionError(f"import cycle: {' -> '.join(exc.args[1])}") from None


#: Run in one fresh interpreter: every third-party module kraftform imports at module level is loaded once, then each
#: kraftform module is imported in a child forked from it, where no kraftform module is loaded yet. What is checked
#: is kraftform's own import order; a fresh `python -c` per module spent 40 s of CPU re-importing pyspark and grpc.
_FORKING = """
import importlib, json, os, sys
names, outside = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for name in outside:
    try:
        importlib.import_module(name)
    except Exception:  # an optional extra: the child meets the same failure in kraftform's own words
        pass
assert not [m for m in sys.modules if m.split(".")[0] == "kraftform"]
failures = {}
for name in names:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            importlib.import_module(name)
            error = ""
        except BaseException as exc:
            error = f"{type(exc).__name__}: {exc}"
        os.write(write, error.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        error = pipe.read()
    _, status = os.waitpid(pid, 0)
    if error or status:
        failures[name] = error or f"exit status {status}"
print(json.dumps(failures))
"""


def _outside_imports(modules: dict[str, Path]) -> list[str]:
    """The non-kraftform modules kraftform's modules import at their top level."""
    found = set()
    for path in modules.values():
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                found.add(node.module)
    return sorted(n for n in found if n.split(".")[0] != "kraftform")


def test_every_module_imports_on_its_own_in_a_fresh_interpreter() -> None:
    modules = _modules()
    names = [n for n in modules if n != "kraftform.__main__"]  # __main__ runs the CLI
    done = subprocess.run([sys.executable, "-c", _FORKING, json.dumps(names), json.dumps(_outside_imports(modules))],
                          capture_output=True, text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {}


def test_the_forked_import_check_reports_a_module_that_fails(tmp_path: Path) -> None:
    (tmp_path / "broken_mod.py").write_text("import kraftform.units\nraise RuntimeError('half-made')\n")
    done = subprocess.run([sys.executable, "-c", _FORKING, json.dumps(["broken_mod", "kraftform.units"]), "[]"],
                          capture_output=True, text=True, check=True, timeout=120, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"})
    assert json.loads(done.stdout) == {"broken_mod": "RuntimeError: half-made"}


#: The layers, lowest first: a package imports only from its own layer or a lower one. The model of the specs
#: (`specset`) sits just above the base modules, so reading specs never pulls in Spark, Kafka or Docker; Spark's
#: rules join the model's in `declared`; only `runtime` and `pulumi` start things; the CLI is the top.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"errors", "units", "versions", "waiting", "subprocesses", "statefiles", "tables", "definitions"}),
    frozenset({"specset"}),
    frozenset({"cluster", "lint"}),
    # `monitoring` judges what is seen against the specs, Connect's connectors as the plan models them included.
    frozenset({"artifacts", "registry_app", "plan", "monitoring"}),
    frozenset({"kafka", "connect", "registry"}),
    frozenset({"spark"}),
    frozenset({"sizing", "declared"}),
    frozenset({"runtime"}),
    frozenset({"verification", "pulumi", "testing"}),
    frozenset({"cli", "__main__"}),
)


def _layer(package: str) -> int:
    found = [i for i, layer in enumerate(LAYERS) if package in layer]
    assert found, f"kraftform.{package} is in no layer: add it to LAYERS where it belongs"
    return found[0]


def test_every_import_goes_down_the_layers_package_by_package() -> None:
    modules = _modules()
    climbing = []
    for name, path in modules.items():
        if name == "kraftform":  # the package's own __init__: its version only
            continue
        source = name.split(".")[1]
        for target in _imports(name, path, modules):
            if target == "kraftform":
                continue
            imported = target.split(".")[1]
            if imported != source and _layer(imported) > _layer(source):
                climbing.append(f"{name} -> {target}")
    assert not climbing, "imports climbing up the layers:\n" + "\n".join(sorted(climbing))
    assert not _package_cycles(modules), "packages importing each other (within a layer, one arrow runs up):\n" + \
        "\n".join(_package_cycles(modules))
    assert {p for layer in LAYERS for p in layer} == {n.split(".")[1] for n in modules if n != "kraftform"}


def _package_cycles(modules: dict[str, Path]) -> list[str]:
    """Pairs of packages that import each other, each with one module import of each way: two packages of one
    layer may import one another's modules without a module cycle, yet then neither is below the other."""
    edges: dict[tuple[str, str], str] = {}
    for name, path in modules.items():
        if name == "kraftform":
            continue
        for target in _imports(name, path, modules) - {"kraftform"}:
            pair = (name.split(".")[1], target.split(".")[1])
            if pair[0] != pair[1]:
                edges.setdefault(pair, f"{name} -> {target}")
    return sorted(f"{edges[(a, b)]} and {edges[(b, a)]}" for a, b in edges if (b, a) in edges and a < b)


def test_the_package_cycle_check_finds_two_packages_importing_each_other(tmp_path: Path) -> None:
    for package, imported in (("one", "two"), ("two", "one")):
        (tmp_path / "kraftform" / package).mkdir(parents=True)
        (tmp_path / "kraftform" / package / "__init__.py").write_text("")
        (tmp_path / "kraftform" / package / "mod.py").write_text(f"from kraftform.{imported} import mod\n")
    modules = {f"kraftform.{p}.mod": tmp_path / "kraftform" / p / "mod.py" for p in ("one", "two")}
    assert _package_cycles(modules) == [
        "kraftform.one.mod -> kraftform.two.mod and kraftform.two.mod -> kraftform.one.mod"]


#: What `kraftform plan --command-config` and `validate` import: the CLI, the validating layers and the Admin code.
PLAN_PATH = ("kraftform.cli", "kraftform.cli.reconcile_commands", "kraftform.kafka.reconcile",
             "kraftform.specset.loader", "kraftform.spark.checks", "kraftform.plan.render")


def test_plan_and_validate_never_load_spark_pulumi_or_docker() -> None:
    """A plan is a Kafka client's work: Spark, Pulumi and Docker cost a second of imports it has no use for."""
    code = (f"import sys\nfor m in {PLAN_PATH!r}: __import__(m)\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'pyspark', 'py4j', 'pulumi', 'pulumi_docker', "
            "'pulumi_policy', 'dill', 'grpc', 'docker'}))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert done.stdout.strip() == "[]", done.stdout


def test_each_room_of_the_runtime_is_one_a_reader_can_hold() -> None:
    """`runtime/`'s packages, each what one kind of thing runs on: none over 2,500 lines or 12 modules, and
    `runtime/` itself holds only the runtime protocol and the modules of one room each."""
    runtime = INFRA / "kraftform" / "runtime"
    rooms = [p for p in runtime.iterdir() if (p / "__init__.py").is_file()]
    assert {p.name for p in rooms} == {"engines", "nodes", "connect", "registry", "observation"}
    for room in [runtime, *rooms]:
        modules = list(room.glob("*.py"))
        lines = sum(len(m.read_text().splitlines()) for m in modules)
        assert len(modules) <= 12 and lines <= 2500, (room.name, len(modules), lines)
