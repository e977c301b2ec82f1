"""The one exception hierarchy of kraftform.

    KraftformError                 anything a user can act on; the CLI prints it and exits 1
    ├── SpecError                  the spec set is invalid; carries every problem found, each with its place
    ├── UsageError                 the command line or its files are wrong (missing directory, bad option)
    ├── PlanRefusedError           a change that kraftform refuses to make (e.g. a partition decrease)
    ├── ConnectionFailed           the cluster cannot be reached with this client config (nobody listens, TLS)
    │   └── AuthenticationFailed   the cluster answered and refused the credentials
    ├── AuthorizationDenied        logged in, but an ACL does not allow the operation
    ├── KafkaRequestFailed         the cluster refused or failed a request (each resource's cause listed)
    ├── ClusterUnhealthy           the cluster, a container or a job is not in the state waited for in time
    ├── EnvironmentMissing         Java, Maven, Docker, debootstrap or a Kafka tool is missing or failed here
    │   └── HostUnreachable        one of the specs' hosts: its Docker engine does not answer
    ├── StateCorrupted             a state file (the cluster's CA, its node records) is there but unreadable
    └── InternalError              a kraftform bug, not the user's doing

Which of ConnectionFailed, AuthenticationFailed, AuthorizationDenied and KafkaRequestFailed an Admin error is
gets decided in one place, `kafka.admin.classify`, for every caller.

Lower-level exceptions (YAML, jsonschema, OS errors) are translated at the boundary, so the CLI never
shows a traceback for a user's mistake.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Location:
    """Where a value sits in a spec file: 1-based line and column, and its JSON path."""

    file: str
    line: int = 1
    column: int = 1
    path: str = "$"

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.path}"


@dataclass(frozen=True, order=True)
class Problem:
    """One thing wrong with the specs; sorted by place so reports are stable."""

    location: Location
    message: str

    def __str__(self) -> str:
        # One problem, one line: tools and reviewers grep these.
        return f"{self.location}: {' '.join(self.message.split())}"


class KraftformError(Exception):
    """Base of every error a user can fix; `str()` is the message the CLI prints."""


class UsageError(KraftformError):
    """The invocation is wrong: a missing directory, an unreadable file, an unknown profile."""


class PlanRefusedError(KraftformError):
    """kraftform will not make this change (it would lose data or cannot be done by Kafka)."""


class ConnectionFailed(KraftformError):
    """The cluster cannot be reached with this client config: nobody listens, TLS fails, wrong protocol."""


class AuthenticationFailed(ConnectionFailed):
    """The cluster answered and refused the credentials: fix the password or user in the client config."""


class AuthorizationDenied(KraftformError):
    """Logged in, but an ACL does not allow the operation: add the ACL to the specs and apply."""


class KafkaRequestFailed(KraftformError):
    """The cluster refused or failed a request kraftform sent (a create, an alter, a reassignment)."""


class ClusterUnhealthy(KraftformError):
    """The cluster answered but is not in the state waited for (brokers missing, records not read back,
    applied changes not reported) within the stated deadline."""


class EnvironmentMissing(KraftformError):
    """Something kraftform runs is missing or failed on this machine: Java, Maven, Docker, debootstrap, a
    Kafka tool. `bash scripts/setup` installs all of them."""


class HostUnreachable(EnvironmentMissing):
    """A host's Docker engine does not answer (the host down, cut off, dropping packets): a command acts on the
    hosts that answer where it can, and says which work waits for this one."""

    def __init__(self, host: str, message: str) -> None:
        super().__init__(message)
        self.host = host


class StateCorrupted(KraftformError):
    """A state file kraftform wrote (a cluster's CA, its node records) is there but cannot be read: it was
    damaged from outside, since kraftform writes each one atomically. Nothing is started afresh over it."""


class InternalError(KraftformError):
    """A kraftform bug, not the user's doing: report it with the command that caused it."""


class SpecError(KraftformError):
    """The spec set is invalid. Holds all problems, so the user fixes them in one pass."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: Sequence[Problem] = tuple(sorted(set(problems)))
        super().__init__("\n".join(str(p) for p in self.problems))
