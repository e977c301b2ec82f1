"""Finding secrets in text a run left behind: the known passwords, and private keys by their PEM markers.

Only the values are searched for; a hit is reported by its label and line, never by the value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

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
