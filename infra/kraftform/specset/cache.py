"""Validated spec sets kept by content, so a command run again on unchanged specs does not parse, schema-check
and cross-check them again (0.9 to 1.3 s of a no-op plan of 1,000 topics, docs/benchmarks.md).

Safe because validation is a pure function of the spec files' bytes and kraftform's own code and schemas (it reads
no environment variable and no other file: a secret is a reference in the model, read at apply time). The key is a
digest of the directory's path, every spec file's path and bytes and of every file of kraftform's package and JSON
schemas (path, size, modification time), so any edit to either misses. Only a valid spec set is kept: an invalid
one is validated again each time and reports every problem. The cache lives in $XDG_CACHE_HOME/kraftform
(~/.cache/kraftform), each entry written atomically; KRAFTFORM_SPEC_CACHE=0 turns it off, and an entry that cannot
be read is a miss.

An entry is a pickle, and unpickling runs code: so nothing is unpickled that this user did not write. The directory
must be this user's and writable by no one else (else the cache is off), and each entry carries an HMAC-SHA256 of
its bytes under a key only this user can read (`.key`, 0600, made once): an entry another writer put or changed
there fails the check and is a miss, never loaded.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import pickle
import secrets
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path

from kraftform.specset.model import SpecSet

PACKAGE = Path(__file__).resolve().parents[1]
#: Where the JSON schemas may be read from (`specset.schema.schema_dir`): the wheel's copy, or the repository's.
SCHEMA_DIRS = (PACKAGE / "specset" / "schema", PACKAGE.parents[1] / "specs" / "schema")
#: Entries kept; the oldest beyond this are removed when one is written.
KEEP = 32


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kraftform" / "specs"


def enabled() -> bool:
    return os.environ.get("KRAFTFORM_SPEC_CACHE", "1") not in ("0", "false", "no")


def _code_files() -> Iterable[Path]:
    yield from PACKAGE.rglob("*.py")
    for schemas in SCHEMA_DIRS:
        if schemas.is_dir():
            yield from schemas.glob("*.json")


def key(specs_dir: Path, spec_files: Iterable[Path]) -> str:
    """The digest of what validation reads: the spec files' bytes and kraftform's code and schemas, and where the
    directory is (every `Location` in the model names its file by path: a copy elsewhere must not be told its
    problems are in the original)."""
    digest = hashlib.sha256(b"kraftform-specs-1\0" + str(specs_dir.resolve()).encode() + b"\0")
    for path in spec_files:
        digest.update(str(path.relative_to(specs_dir)).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    for path in sorted(_code_files()):
        stat = path.stat()
        digest.update(f"{path}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()


def _owned_privately(path: Path, mode_mask: int) -> bool:
    """`path` is this user's and none of `mode_mask`'s permission bits are set on it."""
    info = path.stat()
    return info.st_uid == os.getuid() and stat.S_IMODE(info.st_mode) & mode_mask == 0


def _mac_key(directory: Path) -> bytes | None:
    """The cache's key, made on first use; None when the directory or the key is not this user's alone (then the
    cache is off: an entry there could have been written by someone else)."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _owned_privately(directory, 0o022):
            return None
        path = directory / ".key"
        try:
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(handle, "wb") as out:
                out.write(secrets.token_bytes(32))
        if not _owned_privately(path, 0o077):
            return None
        secret = path.read_bytes()
        return secret if len(secret) == 32 else None
    except OSError:
        return None


def _tag(secret: bytes, body: bytes) -> bytes:
    return hmac.new(secret, body, hashlib.sha256).digest()


def cached(specs_dir: Path, spec_files: list[Path], load: Callable[[], SpecSet]) -> SpecSet:
    """The spec set `load` validates, from the cache when these exact files were validated by this exact code."""
    if not enabled() or not spec_files:
        return load()
    try:
        entry = cache_dir() / f"{key(specs_dir, spec_files)}.pickle"
    except OSError:  # a file vanished while being read: validation reports it properly
        return load()
    secret = _mac_key(entry.parent)
    if secret is None:
        return load()
    try:
        raw = entry.read_bytes()
        tag, body = raw[:32], raw[32:]
        if hmac.compare_digest(tag, _tag(secret, body)):  # checked before anything is unpickled
            found = pickle.loads(body)
            if isinstance(found, SpecSet):
                return found
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
        pass  # no entry, or one written by other code: a miss
    specs = load()
    _store(entry, specs, secret)
    return specs


def _store(entry: Path, specs: SpecSet, secret: bytes) -> None:
    """Written to a temporary file (0600) and renamed, so a reader never sees half an entry; a cache that cannot be
    written is no error (the next run validates again)."""
    try:
        handle, temporary = tempfile.mkstemp(dir=entry.parent, prefix=".entry-")
        body = pickle.dumps(specs, protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(handle, "wb") as out:
            out.write(_tag(secret, body) + body)
        os.replace(temporary, entry)
        entries = sorted(entry.parent.glob("*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in entries[KEEP:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass
