"""SCRAM passwords: where they come from, and whether the cluster still accepts them.

Kafka stores only salted hashes and never returns them, so "is the password current?" is answered the
only honest way: by logging in with the password from the secret store. A failed login means the
secret was rotated (or changed behind kraftform's back) and the credential must be set again.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kraftform.cluster.connection import Connection
from kraftform.errors import KraftformError, UsageError
from kraftform.kafka.admin import Admin, is_auth_error
from kraftform.plan.state import ClusterState
from kraftform.specset.model import SecretRef, UserSpec

LOGIN_TIMEOUT = 15.0


def read_secret(ref: SecretRef, pulumi_secrets: Mapping[str, str] | None = None) -> str | None:
    """The secret's value, or None when its source does not hold it."""
    if ref.source == "env":
        return os.environ.get(ref.name) or None
    if ref.source == "file":
        path = Path(ref.name)
        return path.read_text(encoding="utf-8").strip() or None if path.is_file() else None
    return (pulumi_secrets or {}).get(ref.name)


def passwords(users: tuple[UserSpec, ...], pulumi_secrets: Mapping[str, str] | None = None) -> dict[str, str | None]:
    return {u.name: read_secret(u.password, pulumi_secrets) for u in users}


WHERE = {"env": "environment variable", "file": "file", "pulumi_config": "Pulumi config secret"}


def missing_password(user: UserSpec) -> str:
    """Where a user's password should be and is not: its name, never a value."""
    return f"user {user.name!r}: the {WHERE[user.password.source]} {user.password.name} holds no password"


def require_password(user: UserSpec, found: Mapping[str, str | None]) -> str:
    value = found.get(user.name)
    if value is None:
        raise UsageError(f"{user.location}: {missing_password(user)}; set it before applying")
    return value


def require_passwords(users: Iterable[UserSpec], found: Mapping[str, str | None]) -> None:
    """Every missing password at once, so one run tells the user everything to set."""
    missing = [u for u in users if found.get(u.name) is None]
    if len(missing) == 1:
        require_password(missing[0], found)
    if missing:
        raise UsageError(f"{len(missing)} passwords are not set; nothing was applied:\n" + "\n".join(
            f"  {u.location}: {missing_password(u)}" for u in missing))


def logs_in(connection: Connection, user: UserSpec, password: str) -> bool:
    """True if the cluster accepts `password` for `user`; errors other than authentication propagate."""
    admin = Admin(connection.as_user(user.name, password, user.mechanism))
    try:
        admin.metadata(timeout=LOGIN_TIMEOUT)
        return True
    except KraftformError:
        admin.client.poll(0)
        if any(is_auth_error(e) for e in admin.errors):
            return False
        raise


def check_passwords(connection: Connection, observed: ClusterState, users: tuple[UserSpec, ...],
                    found: Mapping[str, str | None]) -> ClusterState:
    """`observed` with `password_ok` set for every declared user that exists and has a readable secret."""
    checkable = tuple(u for u in users if u.name in observed.users)
    return with_logins(observed, logins(connection, checkable, found))


def logins(connection: Connection, users: tuple[UserSpec, ...], found: Mapping[str, str | None]) -> dict[str, bool]:
    """Whether each user with a readable secret logs in with it, the logins side by side. A caller may start them
    before it knows which users exist (beside its observation of the cluster): a user that does not exist yet
    just fails to log in, and `with_logins` reads only the existing users' results."""
    checkable = [u for u in users if found.get(u.name) is not None]
    if not checkable or connection.mechanism is None:
        return {}
    with ThreadPoolExecutor(max_workers=min(8, len(checkable))) as pool:
        return dict(zip((u.name for u in checkable),
                        pool.map(lambda u: logs_in(connection, u, found[u.name] or ""), checkable), strict=True))


def with_logins(observed: ClusterState, results: Mapping[str, bool]) -> ClusterState:
    """`observed` with each existing user's login result as its `password_ok`."""
    if not results:
        return observed
    return dataclasses.replace(observed, users={
        name: dataclasses.replace(state, password_ok=results.get(name)) for name, state in observed.users.items()})


def refusing_brokers(connection: Connection, users: Iterable[UserSpec], found: Mapping[str, str | None],
                     admin: Admin | None = None) -> dict[str, list[int]]:
    """Each user whose password some broker refuses now, with those brokers, each asked alone (its address the
    only bootstrap). A SCRAM credential reaches each broker with the metadata it applies at its own pace: right
    after an apply created or rotated it, one broker accepts the new password while another still refuses it
    (a consumer started then failed its login on broker 2 in a real `pulumi up`). A broker that cannot be asked
    counts as refusing: a login there would fail too."""
    checkable = [u for u in users if found.get(u.name) is not None]
    if not checkable or connection.mechanism is None:
        return {}
    brokers = (admin or Admin(connection)).metadata().brokers
    pairs = [(u, node, f"{b.host}:{b.port}") for u in checkable for node, b in sorted(brokers.items())]

    def accepted(pair: tuple[UserSpec, int, str]) -> bool:
        user, _, address = pair
        try:
            return logs_in(dataclasses.replace(connection, bootstrap=address), user, found[user.name] or "")
        except KraftformError:
            return False

    refused: dict[str, list[int]] = {}
    with ThreadPoolExecutor(max_workers=min(8, len(pairs))) as pool:
        for (user, node, _), ok in zip(pairs, pool.map(accepted, pairs), strict=True):
            if not ok:
                refused.setdefault(user.name, []).append(node)
    return refused
