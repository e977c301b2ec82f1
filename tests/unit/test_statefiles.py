"""State files survive a writer killed at any point: the old file or the new one, never an empty or partial one;
a damaged one is an error naming it."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from kraftform.errors import StateCorrupted
from kraftform.runtime.nodes.deployment import SECRETS_FILE, STATE_FILE, load, load_secrets
from kraftform.statefiles import PRIVATE, read_json, write_atomic

#: A writer that SIGKILLs itself at `point`: after the new bytes are on disk in the temporary file, before the
#: rename (or, for "mid-write", halfway through its bytes).
KILLED_WRITER = """
import os, signal, sys
from pathlib import Path
from kraftform import statefiles
point, path = sys.argv[1], Path(sys.argv[2])
if point == "before-rename":
    statefiles.os.replace = lambda *a: os.kill(os.getpid(), signal.SIGKILL)
else:
    real = statefiles.os.fdopen
    class Half:
        def __init__(self, f): self.f = f
        def __enter__(self): return self
        def __exit__(self, *a): self.f.close()
        def write(self, text):
            self.f.write(text[: len(text) // 2]); self.f.flush(); os.kill(os.getpid(), signal.SIGKILL)
    statefiles.os.fdopen = lambda *a, **k: Half(real(*a, **k))
statefiles.write_atomic(path, '{"ca": "NEW"}', statefiles.PRIVATE)
"""


@pytest.mark.parametrize("point", ["before-rename", "mid-write"])
def test_a_writer_killed_before_the_rename_leaves_the_old_file_whole(tmp_path: Path, point: str) -> None:
    path = tmp_path / SECRETS_FILE
    write_atomic(path, '{"ca": "OLD"}', PRIVATE)
    done = subprocess.run([sys.executable, "-c", KILLED_WRITER, point, str(path)], capture_output=True, timeout=60,
                          check=False)
    assert done.returncode == -9, done.stderr  # it really died by SIGKILL at that point
    assert json.loads(path.read_text()) == {"ca": "OLD"}
    leftovers = [p for p in tmp_path.iterdir() if p != path]
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in leftovers)  # a partial secret is private too


def test_a_private_file_is_never_wider_than_0600(tmp_path: Path) -> None:
    path = tmp_path / "admin.properties"
    path.write_text("old")
    os.chmod(path, 0o644)
    write_atomic(path, "sasl.password=x", PRIVATE)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.read_text() == "sasl.password=x"


@pytest.mark.parametrize(("name", "read"), [(STATE_FILE, load), (SECRETS_FILE, load_secrets)])
def test_a_damaged_state_file_is_an_error_naming_it_never_a_fresh_start(tmp_path: Path, name: str,
                                                                         read: object) -> None:
    (tmp_path / name).write_text('{"nodes": [')  # what an in-place rewrite left after a crash
    with pytest.raises(StateCorrupted) as caught:
        read(tmp_path)  # type: ignore[operator]
    assert str(tmp_path / name) in str(caught.value)


def test_read_json_names_what_the_file_holds(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text("")
    with pytest.raises(StateCorrupted, match="the roll's progress cannot be read"):
        read_json(tmp_path / "x.json", "the roll's progress")
