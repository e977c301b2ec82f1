"""Finding secrets in text a run left behind or showed: the known passwords, and private keys by their PEM markers,
in files of every mode and in every process's command line while the run went on.

Only the values are searched for; a hit is reported by its label and line, never by the value. A secret belongs in
one place only: a file only its owner reads (0600) inside a state directory (`held`); anywhere else it is a leak.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

PRIVATE_KEY_MARKER = "PRIVATE KEY-----"
#: Shorter values would match by chance (and no generated password is this short).
MIN_SECRET_LENGTH = 8


@dataclass(frozen=True, order=True)
class Leak:
    where: str
    line: int
    secret: str  # its label, e.g. "password of user orders-service"


def find_leaks(where: str, text: str, secrets: Mapping[str, str]) -> list[Leak]:
    """Every line of `text` holding one of `secrets` (label -> value) or a PEM private key."""
    wanted = {label: value for label, value in secrets.items() if len(value) >= MIN_SECRET_LENGTH}
    leaks = []
    for number, line in enumerate(text.splitlines(), 1):
        for label, value in wanted.items():
            if value in line:
                leaks.append(Leak(where, number, label))
        if PRIVATE_KEY_MARKER in line:
            leaks.append(Leak(where, number, "a PEM private key"))
    return leaks


def held(path: Path, homes: Iterable[Path]) -> bool:
    """Whether `path` is where a secret belongs: owner-only, inside one of the state directories `homes`."""
    return stat.S_IMODE(path.stat().st_mode) & 0o077 == 0 and any(h == path or h in path.parents for h in homes)


def command_lines() -> set[str]:
    """Every process's command line on this machine now (containers' processes included: the host sees them), its
    arguments joined by spaces; processes that end while being read are skipped."""
    return {_joined(raw) for raw in _raw_command_lines()}


def _joined(raw: bytes) -> str:
    return raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", errors="replace")


def _raw_command_lines() -> set[bytes]:
    """`/proc/*/cmdline` as read, through plain file descriptors: a sampler calls this every few milliseconds
    beside the processes it watches, so it must cost them little (a fifth of what `Path` reads cost)."""
    lines = set()
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            fd = os.open(f"/proc/{name}/cmdline", os.O_RDONLY)
        except OSError:
            continue
        chunks = []
        try:
            while chunk := os.read(fd, 1 << 16):
                chunks.append(chunk)
        except OSError:
            continue
        finally:
            os.close(fd)
        if chunks:
            lines.add(b"".join(chunks))
    return lines


class CommandLineSampler:
    """The command lines seen while a run goes on (every `interval` seconds, in a thread): what `ps` showed any
    user of the machine at some moment."""

    def __init__(self, interval: float = 0.25) -> None:
        self.interval = interval
        self.seen: set[str] = set()
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="command-line sampler", daemon=True)

    def _run(self) -> None:
        raw_seen: set[bytes] = set()
        while not self._stop.is_set():
            new = _raw_command_lines() - raw_seen  # only lines not seen yet are decoded
            raw_seen |= new
            self.seen |= {_joined(raw) for raw in new}
            self.samples += 1
            self._stop.wait(self.interval)

    def __enter__(self) -> CommandLineSampler:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()
