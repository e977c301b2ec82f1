"""The whole loop the CLI and the Pulumi providers share: observe, plan, apply, observe again."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from kraftform.cluster.connection import Connection
from kraftform.errors import ClusterUnhealthy
from kraftform.kafka.admin import Admin
from kraftform.kafka.apply import Applier, ApplyOptions, Progress, check_applicable
from kraftform.kafka.credentials import check_passwords, missing_password, passwords, refusing_brokers
from kraftform.kafka.observe import Observation, observe, topics_per_broker
from kraftform.plan.changes import Action, Change, Kind, Plan
from kraftform.plan.live import Desired, OwnLogin, desired_of, plan_against
from kraftform.plan.render import render_text
from kraftform.specset.model import SpecSet
from kraftform.waiting import NotYet, poll

#: How long an applied change may take to show in what brokers report: metadata reaches every broker a
#: moment after the controller commits it, but a broker creating thousands of replicas applies the
#: metadata log behind them (1,000 new topics kept 1,000 ACLs out of DescribeAcls for over 10 s), so the
#: wait grows with the plan. It ends as soon as the cluster matches, so a generous floor costs a healthy cluster
#: nothing: 10 s was too short for a Pulumi stack's first `up`, its brokers just started and Spark images
#: loading beside them (a quota and three ACLs unreported after 10 s, in one run of three).
SETTLE_S = 30.0
SETTLE_PER_CHANGE_S = 0.05
SETTLE_MAX_S = 600.0
#: Changes still unreported this long after they were sent are sent again (the idempotent kinds only): a write a
#: busy broker dropped is then not waited for until the deadline.
RESEND_AFTER_S = 10.0


def resendable(change: Change) -> bool:
    """Writes that are the same whether sent once or twice: credentials, ACLs, quotas, topic and broker configs,
    and topic creation ("already exists" is success). Partition growth and deletions are not sent twice."""
    return change.kind in (Kind.USER, Kind.ACL, Kind.QUOTA, Kind.TOPIC_CONFIG, Kind.BROKER_CONFIG) or (
        change.kind is Kind.TOPIC and change.action is Action.CREATE)


@dataclass(frozen=True)
class LivePlan:
    plan: Plan
    observation: Observation
    passwords: Mapping[str, str | None]
    #: The logins beyond the admin's that the plan protected (`own_logins`): apply's plans after it protect them too.
    logins: Mapping[str, OwnLogin] = field(default_factory=dict)


def _wanted(declared: SpecSet | Desired) -> Desired:
    return desired_of(declared) if isinstance(declared, SpecSet) else declared


def plan_cluster(connection: Connection, declared: SpecSet | Desired, found: Mapping[str, str | None] | None = None,
                 admin: Admin | None = None, logins: Mapping[str, OwnLogin] | None = None) -> LivePlan:
    """Observe in bulk, check the declared users' passwords by logging in, and plan. `declared` is a spec set,
    or the slice of one a caller declares (`plan.live.Desired`: a Pulumi resource's). `found` holds the users'
    passwords when the caller has them (Pulumi secrets); by default they are read from the users' secret
    references. `logins`: what else logs in as kraftform's own beside `connection`'s admin (a Connect cluster's
    running workers: `runtime.connect.clusters.workers_logins`), never altered or deleted by the plan."""
    wanted = _wanted(declared)
    users = wanted.users
    found = passwords(users) if found is None else found
    observation = observe(connection, list(wanted.topics_only) if wanted.topics_only is not None else None,
                          admin, broker_keys=sorted(wanted.broker_config or ()),
                          features=wanted.features, groups=sorted(wanted.group_configs),
                          topic_configs_of=wanted.owns.topic, known_topics=list(wanted.state.topics))
    # After the observation, and only of the users that exist: the quick start's apply timed out one such login
    # when they ran beside it, for every declared user, on a loaded machine.
    state = check_passwords(connection, observation.state, users, found)
    own = dict(logins or {})
    if connection.username:
        own[connection.username] = OwnLogin("the admin this plan logs in as")
    plan = plan_against(wanted, state, own)
    unchecked = sorted(u.name for u in users if found.get(u.name) is None and u.name in state.users)
    notes = list(plan.notes)
    if unchecked:
        notes.append(f"passwords not checked (secret not available here): {', '.join(unchecked)}")
    if observation.skipped_acls:
        notes.append(f"{observation.skipped_acls} ACL binding(s) on delegation-token or user resources are not "
                     f"managed by kraftform and were left alone")
    # Users the plan creates or updates need their password; name every one that is missing (never a value).
    needed = {c.resource for c in plan.changes
              if c.kind is Kind.USER and c.action not in (Action.DELETE, Action.REFUSE)}
    problems = tuple(missing_password(u) for u in users if u.name in needed and found.get(u.name) is None)
    return LivePlan(dataclasses.replace(plan, notes=tuple(notes), problems=problems),
                    dataclasses.replace(observation, state=state), found, dict(logins or {}))


def lagging_brokers(connection: Connection, topics: Mapping[str, Action], admin: Admin | None = None) -> list[int]:
    """The brokers whose metadata does not show yet the topics an apply created (`Action.CREATE`) or deleted
    (`Action.DELETE`): a plan read from one broker can be empty while a client of another still meets the old set."""
    created = {name for name, action in topics.items() if action is Action.CREATE}
    return [broker for broker, listed in topics_per_broker(connection, topics, admin).items()
            if listed != created]


def apply_cluster(connection: Connection, declared: SpecSet | Desired, live: LivePlan, options: ApplyOptions,
                  progress: Progress, settle_s: float | None = None, admin: Admin | None = None) -> LivePlan:
    """Apply `live.plan` and observe again until what the Admin protocol can do of it is done; returns the final
    plan, empty unless it holds node work (`Plan.node_work`: the cluster's own nodes differ from the specs), which
    is never done here and is the caller's to report."""
    wanted = _wanted(declared)
    check_applicable(live.plan, wanted.users, live.passwords, options)
    applier = Applier(connection, live.passwords, options, progress, admin)
    work = live.plan.without_node_work()
    applier.run(work)
    if settle_s is None:
        settle_s = min(SETTLE_MAX_S, SETTLE_S + SETTLE_PER_CHANGE_S * len(work.changes))
    started = sent = time.monotonic()
    seen: list[LivePlan] = []
    topics = {c.resource: c.action for c in work.changes
              if c.kind is Kind.TOPIC and c.action in (Action.CREATE, Action.DELETE)}
    passwords_set = {c.resource for c in work.changes
                     if c.kind is Kind.USER and c.action in (Action.CREATE, Action.UPDATE)}

    def reported() -> LivePlan:
        nonlocal sent
        seen.append(plan_cluster(connection, wanted, live.passwords, admin, live.logins))
        remaining = len(seen[-1].plan.without_node_work().changes)
        if not remaining and topics:
            behind = lagging_brokers(connection, topics, admin)
            if behind:
                raise NotYet(f"broker(s) {', '.join(map(str, behind))} do not report the created and deleted "
                             f"topics yet")
        if not remaining and passwords_set:  # a client may meet any broker: each must accept the new logins
            refused = refusing_brokers(connection, [u for u in wanted.users if u.name in passwords_set],
                                       live.passwords, admin)
            if refused:
                raise NotYet("; ".join(f"broker(s) {', '.join(map(str, nodes))} do not accept {name}'s password "
                                       f"yet" for name, nodes in sorted(refused.items())))
        if remaining:
            if len(seen) == 1:  # say once what the wait is for
                progress(f"waiting up to {settle_s:.0f} s for the brokers to report {remaining} applied "
                         f"change(s) ...")
            again = [c for c in seen[-1].plan.without_node_work().changes if resendable(c)]
            if again and time.monotonic() - sent >= RESEND_AFTER_S:
                progress(f"{len(again)} change(s) not reported after {time.monotonic() - sent:.0f} s: sending them "
                         f"again")
                applier.run(Plan.of(again))
                sent = time.monotonic()
            raise NotYet(f"{remaining} change(s) not reported")
        return seen[-1]

    try:
        after = poll("the brokers to report the applied plan", settle_s, reported)
    except ClusterUnhealthy:
        raise ClusterUnhealthy(f"the cluster does not match the specs {settle_s:.0f} s after apply; remaining "
                               f"changes:\n" + render_text(seen[-1].plan)) from None
    if len(seen) > 1:
        progress(f"waited {time.monotonic() - started:.1f} s for the brokers to report the applied changes")
    else:
        progress(f"read back: the brokers report every applied change ({time.monotonic() - started:.1f} s)")
    return after
