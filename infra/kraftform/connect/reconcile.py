"""Connectors planned and applied through a Connect cluster's REST API.

The plan is validated by the plugins themselves: each new or changed connector's config goes to the worker's
`PUT /connector-plugins/{class}/config/validate`, and every error it returns is a problem of the plan at the
connector's place in the specs; nothing is applied while one remains. Apply sends each connector's work once
(a config PUT however many keys changed) and returns when every connector is in its declared state and, when
running, each of its tasks runs; a task that fails fails the apply with the first line of its trace.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kraftform.connect.rest import ConnectRest
from kraftform.errors import KafkaRequestFailed
from kraftform.plan.changes import ConnectorOffset, ConnectorWork, Plan
from kraftform.plan.connectors import FAILED, RUNNING, LiveConnector, Logins, connector_changes
from kraftform.plan.render import listed
from kraftform.specset.model import AclBinding, ConnectorSpec, ConnectSpec
from kraftform.waiting import NotYet, poll

Progress = Callable[[str], None]
#: How long an apply waits for connectors and tasks to reach their declared state.
SETTLE_TIMEOUT_S = 120.0
#: How long offsets Connect accepted may take to read back: it answers before the offsets topic (or a sink's
#: consumer group) holds them, so one read right after can still show the old ones.
OFFSETS_TIMEOUT_S = 30.0
#: A failure this long is the connector's state, not the status topic still reporting the run before a restart.
FAILED_FOR_S = 5.0
#: As declared this long before apply says so: a task reports running before it fails (a source task whose
#: producer may not write its topic failed 5-6 s after its restart here).
STABLE_FOR_S = 10.0


def plan_connect(rest: ConnectRest, spec: ConnectSpec, granted: frozenset[AclBinding],
                 logins: Logins | None = None, environment: frozenset[str] | None = None) -> Plan:
    """`granted`: the ACL bindings Kafka holds. A connector whose derived grants are not there yet is a problem
    (its tasks would fail on Kafka's refusal): `kraftform apply` makes them, with the rest of the Kafka objects.
    So is a connector whose user's password is not set (`logins.unset`): the workers could not log in as it; and
    one reading a variable the running workers were not started with (`environment`, None when unknown): a worker
    holds only its connectors' declared variables."""
    logins = logins or Logins()
    live = rest.connectors()
    changes = connector_changes(spec.name, spec.connectors, live, logins=logins)
    touched = {c.resource.split("/", 1)[1] for c in changes
               if isinstance(c.payload, ConnectorWork) and c.payload.operation in ("create", "config")}
    unstarted = {c.name: absent for c in spec.connectors
                 if environment is not None and (absent := sorted(set(c.environment_names) - environment))}
    problems = [f"{c.location}: connector {c.name!r}: reads {', '.join(unstarted[c.name])} from the environment, "
                f"which the running workers were not started with: `kraftform connect up` restarts them with it"
                for c in spec.connectors if c.name in unstarted]
    # Checked by the plugin all the same: its words come with the reason above (a login it could not make).
    problems += [problem for c in spec.connectors if c.name in touched for problem in _invalid(rest, c, logins)]
    problems += [f"{c.location}: connector {c.name!r}: the password of its user {c.user!r} is not set"
                 for c in spec.connectors if c.user in logins.unset]
    needs = [(f"Connect cluster {spec.name!r}", spec.location, spec.worker_acls())]
    needs += [(f"connector {c.name!r}", c.location, spec.connector_acls(c)) for c in spec.connectors]
    for named, where, acls in needs:
        missing = sorted({b for acl in acls for b in acl.bindings()} - granted)
        if missing:
            problems.append(f"{where}: {named}: its grants are not in Kafka yet "
                            f"({listed([b.describe() for b in missing], 3)}); `kraftform apply` makes them")
    return Plan(Plan.of(changes).changes, problems=tuple(problems))


def _invalid(rest: ConnectRest, connector: ConnectorSpec, logins: Logins) -> list[str]:
    try:
        errors = rest.validate(connector.connector_class, connector.rest_config(logins.path))
    except KafkaRequestFailed as exc:  # an unknown class is answered 4xx, not as a field error
        return [f"{connector.location}: connector {connector.name!r}: {exc}"]
    return [f"{connector.location}: connector {connector.name!r}: {key}: {message}" for key, message in errors]


def apply_connect(rest: ConnectRest, spec: ConnectSpec, plan: Plan, progress: Progress,
                  timeout: float = SETTLE_TIMEOUT_S, stable_s: float = STABLE_FOR_S) -> None:
    done: set[tuple[str, str]] = set()
    for change in plan.changes:
        work = change.payload
        if not isinstance(work, ConnectorWork):
            continue
        name = change.resource.split("/", 1)[1]
        if (name, work.operation) in done or work.operation == "login":
            continue  # a login's only work is its password file, written before any change
        done.add((name, work.operation))
        progress(f"{spec.name}: {_verb(work)} connector {name} ...")
        if work.operation == "create":
            assert work.config is not None and work.state is not None
            rest.create(name, dict(work.config), work.state)
        elif work.operation == "config":
            assert work.config is not None
            rest.put_config(name, dict(work.config))
        elif work.operation == "state":
            assert work.state is not None
            rest.set_state(name, work.state)
        elif work.operation in ("restart", "relogin"):
            rest.restart(name, only_failed=work.operation == "restart")
        elif work.operation == "delete":
            rest.delete(name)
    wait_declared(rest, spec, timeout, stable_s)


def _verb(work: ConnectorWork) -> str:
    return {"create": "creating", "config": "updating", "restart": "restarting what failed in",
            "relogin": "restarting (its user's new password)",
            "delete": "deleting"}.get(work.operation, {"running": "resuming", "paused": "pausing",
                                                       "stopped": "stopping"}.get(work.state or "", "changing"))


def wait_declared(rest: ConnectRest, spec: ConnectSpec, timeout: float = SETTLE_TIMEOUT_S,
                  stable_s: float = STABLE_FOR_S) -> None:
    """Until each declared connector is in its state and, if running, each of its tasks runs, for `stable_s`; a
    task (or connector) failed for FAILED_FOR_S raises with Connect's own account of it."""
    deadline = time.monotonic() + timeout
    failing_since: dict[str, float] = {}
    settled_since: float | None = None
    while True:
        live = rest.connectors()
        pending = []
        for c in spec.connectors:
            found = live.get(c.name)
            failure = _failure(c, found)
            if failure is None:
                failing_since.pop(c.name, None)
            elif time.monotonic() - failing_since.setdefault(c.name, time.monotonic()) >= FAILED_FOR_S:
                raise KafkaRequestFailed(failure)
            if not _settled(c, found):
                pending.append(f"{c.name}: {found.state if found else 'absent'}")
        if pending:
            settled_since = None
        else:
            settled_since = settled_since or time.monotonic()
            if time.monotonic() - settled_since >= stable_s:
                return
        if time.monotonic() >= deadline:
            raise KafkaRequestFailed(f"Connect cluster {spec.name!r}: not as declared after {timeout:.0f} s: "
                                     f"{'; '.join(pending)}")
        time.sleep(1.0)


def _failure(c: ConnectorSpec, found: LiveConnector | None) -> str | None:
    if found is None or c.state != RUNNING:
        return None
    if found.state == FAILED:
        return f"connector {c.name!r} ({c.location}) failed"
    for task, _, trace in found.failed_tasks:
        return f"connector {c.name!r} ({c.location}): task {task} failed: {trace}"
    return None


def _settled(c: ConnectorSpec, found: LiveConnector | None) -> bool:
    if found is None or found.state != c.state:
        return False
    return c.state != RUNNING or (len(found.tasks) > 0 and all(t[1] == RUNNING for t in found.tasks))


def move_offsets(rest: ConnectRest, name: str, plan: Plan) -> None:
    """Sends the plan's offsets in one request, then reads them back: Connect answers before the offsets topic
    (or a sink's consumer group) holds them, so apply says done only once they read as planned."""
    moves = [(c.payload.partition, c.payload.offset) for c in plan.changes if isinstance(c.payload, ConnectorOffset)]
    rest.alter_offsets(name, moves)

    def stored() -> None:
        now = rest.offsets(name)
        wrong = [f"{partition}: {now.get(partition, '(none)')}" for partition, offset in moves
                 if now.get(partition) != offset]
        if wrong:
            raise NotYet(f"Connect accepted the offsets but reads back {listed(wrong, 3)}")

    poll(f"connector {name!r}: the offsets to read back as planned", OFFSETS_TIMEOUT_S, stored,
         error=KafkaRequestFailed)
