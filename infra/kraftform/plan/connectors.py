"""Connectors: what is declared against what a Connect cluster runs (or against an earlier spec revision), as typed
changes with their safety.

A Connect cluster declared in the specs is kraftform's whole: a connector it runs that no spec declares is
deleted (a destructive change, applied only when allowed). A secret never shows: a declared one is a reference
(`${env:NAME}`), and a value someone set by hand under a secret's name is masked.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from kraftform.plan.changes import Action, Change, ConnectorWork, Kind, Safety
from kraftform.specset.checks import SECRET_KEY
from kraftform.specset.model import LOGINS_PLACEHOLDER, ConnectorSpec

#: Keys whose change makes it another connector: a different class reads the old one's offsets, other topics
#: mean other data.
_IDENTITY_KEYS = {"connector.class": "a different connector class resumes from this connector's offsets",
                  "topics": "the sink reads other topics (from its group's offsets on those it kept)"}

#: Connect's states (its REST API's words, upper case) as the specs spell them.
RUNNING, PAUSED, STOPPED, FAILED = "running", "paused", "stopped", "failed"


@dataclass(frozen=True)
class LiveConnector:
    """A connector as a worker reports it: its config (references unresolved) and states."""

    name: str
    config: Mapping[str, str]
    state: str
    #: Each task's state, and the first line of a failed task's trace.
    tasks: tuple[tuple[int, str, str], ...] = field(default=())

    @property
    def failed_tasks(self) -> tuple[tuple[int, str, str], ...]:
        return tuple(t for t in self.tasks if t[1] == FAILED)


@dataclass(frozen=True)
class Logins:
    """The connector users' passwords as the workers read them: the directory (`login_reference`), the users whose
    file is missing or not their current password (`stale`: running tasks logged in with the old one), and those
    whose password is not set where the specs say (`unset`)."""

    path: str = LOGINS_PLACEHOLDER
    stale: frozenset[str] = frozenset()
    unset: frozenset[str] = frozenset()


#: A JAAS line whose password is given literally (not as a `${provider:...}` reference).
_LITERAL_PASSWORD = re.compile(r'password="(?!\$\{)')


def shown(key: str, value: str | None) -> str | None:
    """A value as a plan shows it: a secret's only if it is a reference, or a login whose password is one."""
    if value is None or not SECRET_KEY.search(key) or value.startswith("${"):
        return value
    if "${" in value and not _LITERAL_PASSWORD.search(value):
        return value
    return "(hidden)"


def declared_as_live(connector: ConnectorSpec) -> LiveConnector:
    """What a declared connector looks like running: for the offline diff, which compares two revisions."""
    return LiveConnector(connector.name, connector.rest_config(), connector.state)


def connector_changes(cluster: str, declared: tuple[ConnectorSpec, ...], live: Mapping[str, LiveConnector],
                      subject: str = "plan", logins: Logins = Logins()) -> list[Change]:
    """The changes that take the Connect cluster `cluster` from `live` to `declared`. In a `diff` the live side is
    the base revision, and a failed task is no change (nothing runs there)."""
    changes: list[Change] = []
    wanted = {c.name: c for c in declared}
    for name, c in wanted.items():
        resource = f"{cluster}/{name}"
        config = c.rest_config(logins.path)
        have = live.get(name)
        if have is None:
            changes.append(Change(Action.CREATE, Kind.CONNECTOR, resource, Safety.SAFE,
                                  f"new {c.type} connector ({c.connector_class.rsplit('.', 1)[-1]}, {c.tasks_max} "
                                  f"task{'s' if c.tasks_max > 1 else ''}, {c.state})",
                                  desired=c.state, payload=ConnectorWork("create", config, c.state)))
            continue
        before = len(changes)
        for key in sorted(set(config) | set(have.config)):
            old, new = have.config.get(key), config.get(key)
            if old == new:
                continue
            identity = _IDENTITY_KEYS.get(key)
            changes.append(Change(
                Action.UPDATE, Kind.CONNECTOR, resource, Safety.DESTRUCTIVE if identity else Safety.DISRUPTIVE,
                identity or "its tasks restart with the new config", key, shown(key, old), shown(key, new),
                payload=ConnectorWork("config", config, None)))
        state = have.state
        if c.user in logins.stale and len(changes) == before:
            # A config PUT restarts the tasks anyway; otherwise they hold the password they started with (a stopped
            # connector has none: they read the new one when they start).
            stopped = state == STOPPED
            changes.append(Change(
                Action.UPDATE, Kind.CONNECTOR, resource, Safety.SAFE if stopped else Safety.DISRUPTIVE,
                f"the password of its user {c.user!r} changed: its tasks "
                + ("read the new one when they start" if stopped else "restart to log in with the new one"),
                "login", payload=ConnectorWork("login" if stopped else "relogin", None, None)))
        if subject == "plan" and c.state == RUNNING and (state == FAILED or have.failed_tasks):
            failed = ", ".join(f"task {t[0]}: {t[2]}" for t in have.failed_tasks) or "the connector failed"
            changes.append(Change(Action.UPDATE, Kind.CONNECTOR, resource, Safety.DISRUPTIVE,
                                  f"restart what failed ({failed})", "state", FAILED, RUNNING,
                                  payload=ConnectorWork("restart", None, None)))
        elif state != c.state and state != FAILED:
            safety = Safety.SAFE if c.state == RUNNING else Safety.DISRUPTIVE
            reason = {RUNNING: "resumes moving data", PAUSED: "its tasks stop until resumed",
                      STOPPED: "its tasks are shut down (its offsets can then be changed)"}[c.state]
            changes.append(Change(Action.UPDATE, Kind.CONNECTOR, resource, safety, reason, "state", state, c.state,
                                  payload=ConnectorWork("state", None, c.state)))
    for name in sorted(set(live) - set(wanted)):
        changes.append(Change(Action.DELETE, Kind.CONNECTOR, f"{cluster}/{name}", Safety.DESTRUCTIVE,
                              "no longer declared: it stops moving data (its offsets stay, for a connector of this "
                              "name later)", current=live[name].state, payload=ConnectorWork("delete", None, None)))
    return changes
