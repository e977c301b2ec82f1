"""Property: no mutation of the example specs makes a command crash.

Mutations: wrong types, negative and huge numbers, missing and unknown keys, duplicated entries, and
broken YAML text. Every outcome must be exit 0 or 1 (2 for a diff with changes), with no traceback, and
every error line must name a file of the spec set with a line and column.
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kraftform.cli import main
from kraftform.verification.mutations import mutate, paths

from ...conftest import EXAMPLE_SPECS

FILES = sorted(p.relative_to(EXAMPLE_SPECS) for p in EXAMPLE_SPECS.rglob("*.yaml"))
ERROR_LINE = re.compile(r"^(?P<file>[^:]+):(?P<line>\d+):(?P<col>\d+): \$.*: .+$")

odd_values = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30), st.sampled_from([-1, 0, 2**31, 2**63, -(2**63)]),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30), st.booleans(), st.none(),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=8), st.integers(), max_size=3),
    st.sampled_from(["7d", "1GiB", "10MB/s", "User:*", "<default>", "", "compact", "-5", "1e400"]),
)


@st.composite
def mutated_specs(draw: st.DrawFn) -> tuple[Path, str]:
    rel = draw(st.sampled_from(FILES))
    text = (EXAMPLE_SPECS / rel).read_text()
    if draw(st.booleans()):
        data = yaml.safe_load(text)
        path = draw(st.sampled_from(paths(data)))
        how = draw(st.sampled_from(["replace", "delete", "duplicate", "unknown_key"]))
        new = yaml.safe_dump(mutate(data, path, how, draw(odd_values)), allow_unicode=True)
    else:
        cut = draw(st.integers(min_value=0, max_value=len(text)))
        junk = draw(st.one_of(st.text(max_size=12), st.sampled_from(["\t", ": :", "- [", "{", "&a *a", "\n  - "])))
        new = text[:cut] + junk + text[cut + draw(st.integers(min_value=0, max_value=20)):]
    return rel, new


def _run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = main(argv)
    return code, err.getvalue()


@settings(max_examples=75, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutation=mutated_specs())
# Found by this test in CI: a key holding \x1e was printed raw, and splitlines() broke the error line there.
@example(mutation=(Path("acls.yaml"), '"\\x1E": 0\n'))
def test_no_mutation_crashes_any_command(mutation: tuple[Path, str]) -> None:
    rel, new_text = mutation
    with tempfile.TemporaryDirectory() as tmp:
        specs = Path(tmp) / "specs"
        shutil.copytree(EXAMPLE_SPECS, specs, ignore=shutil.ignore_patterns("schema"))
        (specs / rel).write_text(new_text)
        code, err = _run(["validate", str(specs)])
        assert code in (0, 1)
        if code == 1:
            lines = err.splitlines()
            assert lines, "exit 1 without an error message"
            for line in lines:
                match = ERROR_LINE.match(line)
                assert match, f"not a located error: {line!r}"
                assert Path(match["file"]).resolve().is_relative_to(specs.resolve()), line
        for argv in (["size", str(specs)], ["diff", str(EXAMPLE_SPECS), str(specs)]):
            assert _run(argv)[0] in (0, 1, 2)
