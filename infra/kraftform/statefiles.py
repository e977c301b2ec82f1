"""State files (a cluster's CA and node keys, its node records, a roll's progress, client files) written so that
a crash, a SIGKILL or a full disk at any moment leaves either the old file or the new one, never an empty or
half-written one: the bytes go to a temporary file in the same directory, created 0600 before any byte is
written, are flushed to disk, and the temporary file is renamed over the old one (and the directory synced).
A file that is there but cannot be read is an error naming it, never a reason to start afresh (a fresh CA would
orphan every node the old one signed)."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from kraftform.errors import StateCorrupted

PRIVATE, PUBLIC = 0o600, 0o644


def write_atomic(path: Path, content: str | bytes, mode: int = PUBLIC) -> None:
    """Replace `path` with `content` (text as UTF-8) in one step; `mode` is set before the rename (PRIVATE for
    secrets)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")  # 0600
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(content.encode() if isinstance(content, str) else content)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _sync_directory(path.parent)


def _sync_directory(directory: Path) -> None:
    """The rename itself on disk (a power loss after it must not bring the old entry back)."""
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def read_json(path: Path, what: str) -> Any:
    """A state file's JSON; StateCorrupted naming the file and `what` it holds when it cannot be read."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StateCorrupted(f"{path}: {what} cannot be read ({exc}); kraftform writes this file atomically, so "
                             f"it was changed or damaged from outside: restore it from a backup (nothing was "
                             f"changed)") from None
