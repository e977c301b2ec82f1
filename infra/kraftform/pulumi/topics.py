"""The stack's topics as one Pulumi resource, applied the way `kraftform apply` applies them.

One resource per topic made `pulumi up` cost one plan, one apply and one settle per topic: the engine
creates resources concurrently, but the dynamic-provider host serves four calls at a time, so 1,000 topics
were 1,000 rounds of Admin requests (109.6 s against 10.3 s for `kraftform apply`). As one resource the
topics are observed, created and configured in the CLI's batches, and `pulumi preview` still shows each
topic's change (the engine diffs the inputs, `topics["<name>"]...`).

What Pulumi's per-resource `protect` did for each topic, the provider does itself: while the stack is
protected, a topic removed from the specs fails `check` (so `pulumi preview` shows it) rather than being
deleted; turn `kraftform:protect` off in one run, then remove the topic in the next. The resource as a whole
keeps Pulumi's `protect`, which guards `pulumi destroy`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

import pulumi
from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    CreateResult,
    DiffResult,
    ReadResult,
    ResourceProvider,
    UpdateResult,
)

from kraftform.definitions.topic_configs import normalize_topic_config
from kraftform.kafka.admin import Admin
from kraftform.kafka.apply import ApplyOptions
from kraftform.kafka.reconcile import apply_cluster, plan_cluster
from kraftform.plan.diff import OWNS_NOTHING, diff_states
from kraftform.plan.live import Desired
from kraftform.plan.state import ClusterState, TopicState
from kraftform.pulumi.providers import connection_of, first_read, until_answering
from kraftform.specset.model import TopicSpec

#: The resource's ID: one topic set per stack.
ID = "topics"


def topic_inputs(topics: Iterable[TopicSpec]) -> dict[str, dict[str, Any]]:
    """The specs' topics as the resource's `topics` input, keyed by name (the engine's diff then names the
    topic that changed)."""
    return {t.name: {"partitions": t.partitions, "replication_factor": t.replication_factor,
                     "config": dict(t.config)} for t in topics}


def _state(topics: Mapping[str, Any]) -> ClusterState:
    """The topics as the planner's desired state; numbers back to ints (the engine hands them over as floats)."""
    return ClusterState(topics={name: TopicState(name, int(t["partitions"]), int(t["replication_factor"]),
                                                 {k: str(v) for k, v in (t.get("config") or {}).items()})
                                for name, t in topics.items()})


def _desired(topics: Mapping[str, Any], removed: Iterable[str]) -> Desired:
    """What the resource declares (its topics) and owns: those, and the ones it held before and no longer
    declares, which the planner then deletes as it deletes any owned topic the specs dropped."""
    owned = frozenset(topics) | frozenset(removed)
    return Desired(_state(topics), dataclasses.replace(OWNS_NOTHING, topic=lambda name: name in owned),
                   topics_only=tuple(sorted(owned)))


def _protected(*props: Mapping[str, Any]) -> bool:
    return any(bool(p.get("protect")) for p in props)


class TopicSetProvider(ResourceProvider):
    """Every topic of the stack: created, grown and configured in batches, one observation per call."""

    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        """Each failure names its topic in its first words and no property: Pulumi prints a property's whole
        value before the reason (`value {<nil>}` for a nested path), which buried the sentence that matters."""
        failures: list[CheckFailure] = []
        topics: dict[str, Any] = {}
        before = _state(olds.get("topics") or {}).topics if olds else {}
        for name, topic in sorted((news.get("topics") or {}).items()):
            config = {}
            for key, value in (topic.get("config") or {}).items():
                try:
                    config[key] = normalize_topic_config(key, value)
                except ValueError as exc:
                    failures.append(CheckFailure("", f"topic {name}: config {key}: {exc}"))
            topics[name] = {**topic, "config": config}
        if olds:  # what the planner refuses (a partition decrease), refused here, so `pulumi preview` shows it
            grown = {n: t for n, t in topics.items() if n in before}
            refused = diff_states(_state(olds.get("topics") or {}), _state(grown)).refused
            failures.extend(CheckFailure("", f"topic {c.resource}: {c.key} {c.current} -> {c.desired} refused: "
                                             f"{c.reason}") for c in refused)
        removed = sorted(set(before) - set(topics))
        if removed and _protected(olds, news):
            failures.extend(CheckFailure("", (
                f"topic {name} was removed from the specs while the stack protects its topics "
                f"(kraftform:protect, on by default in prod): deleting it would delete its data. Run once with "
                f"`pulumi config set kraftform:protect false`, then remove it; or keep it in the specs"))
                for name in removed)
        return CheckResult({**news, "topics": topics}, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        # Compared as Kafka sees them: the engine hands numbers over as floats (a protobuf Struct).
        changed = (_state(olds.get("topics") or {}) != _state(news.get("topics") or {})
                   or bool(olds.get("protect")) != bool(news.get("protect")))
        return DiffResult(changes=changed, replaces=[], stables=[], delete_before_replace=True)

    def create(self, props: dict[str, Any]) -> CreateResult:
        self._reconcile(props, removed=())
        return CreateResult(ID, props)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        self._reconcile(news, removed=sorted(set(olds.get("topics") or {}) - set(news.get("topics") or {})))
        return UpdateResult(news)

    def _reconcile(self, props: dict[str, Any], removed: Iterable[str]) -> None:
        """The CLI's loop over these topics: plan, apply with the removed topics' deletions (`pulumi up`
        already showed the diff and asked; `check` refused removals a protected stack does not allow), then
        observe until the cluster matches."""
        desired = _desired(props.get("topics") or {}, removed)
        with connection_of(props) as connection:
            # One client for the call's reads and writes: each new one is a TLS and SCRAM exchange per broker.
            admin = Admin(connection)
            live = until_answering(connection, "planning the stack's topics",
                                   lambda: plan_cluster(connection, desired, {}, admin))
            # The settle loop then waits until the brokers report every change, deletions included.
            apply_cluster(connection, desired, live, ApplyOptions(allow_destructive=True), lambda _m: None,
                          admin=admin)

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        """What the cluster holds of these topics; a topic deleted behind Pulumi's back reads back missing,
        so the next `pulumi up` creates it again."""
        names = sorted(props.get("topics") or {})
        with connection_of(props) as connection:
            state = first_read(connection, "the stack's topics", names)
        topics = {name: {"partitions": t.partitions, "replication_factor": t.replication_factor,
                         "config": dict(t.config)} for name in names for t in [state.topics.get(name)] if t}
        return ReadResult(id_, {**props, "topics": topics})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        """`pulumi destroy` of a stack that does not protect its topics (Pulumi's `protect` stops it otherwise):
        every topic of the set removed."""
        self._reconcile({**props, "topics": {}}, removed=sorted(props.get("topics") or {}))


class Topics(pulumi.dynamic.Resource):
    """Every topic of the stack; the connection (with its password) is kept as a secret."""

    def __init__(self, name: str, topics: Iterable[TopicSpec], connection: pulumi.Input[dict[str, Any]],
                 protect: bool, opts: pulumi.ResourceOptions | None = None) -> None:
        props = {"connection": pulumi.Output.secret(connection), "topics": topic_inputs(topics), "protect": protect}
        super().__init__(TopicSetProvider(), name, props, pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(additional_secret_outputs=["connection"])))
