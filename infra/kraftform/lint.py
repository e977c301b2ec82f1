"""Organisation rules over a spec set, per environment: the one place they live.

`kraftform lint --env prod|dev` runs them on a spec directory, and the Pulumi policy pack in policies/
runs the same functions on the specs a stack deploys, so the two can never disagree. Each rule is pure:
a `SpecSet` in, findings with the file and line that caused them out.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from kraftform.cluster.topology import topology
from kraftform.definitions.topic_configs import kafka_default
from kraftform.errors import Problem
from kraftform.specset.model import DEFAULT_ENTITY, SpecSet
from kraftform.units import human_duration_ms

Env = Literal["prod", "dev"]
ENVS: tuple[Env, ...] = ("prod", "dev")

#: ACL operations that let a principal change data or metadata.
_MUTATING = frozenset({"write", "alter", "alter_configs", "create", "delete", "all"})


@dataclass(frozen=True)
class Finding:
    rule: str
    problem: Problem

    def __str__(self) -> str:
        return f"{self.problem} [{self.rule}]"


@dataclass(frozen=True)
class Rule:
    id: str
    description: str
    envs: frozenset[Env]
    check: Callable[[SpecSet], Iterator[Problem]]


def _replication(s: SpecSet) -> Iterator[Problem]:
    for t in s.topics:
        min_isr = s.cluster.min_insync(t)
        if t.replication_factor < 3 or min_isr < 2:
            yield Problem(t.location, f"topic {t.name!r}: replication factor {t.replication_factor} and "
                                      f"min.insync.replicas {min_isr}; production needs at least 3 and 2, so "
                                      f"one broker can fail without losing acknowledged writes")


def _wildcard_write(s: SpecSet) -> Iterator[Problem]:
    for acl in s.acls:
        risky = sorted(_MUTATING & set(acl.operations))
        if acl.principal == "User:*" and acl.permission == "allow" and risky:
            yield Problem(acl.location, f"every principal (User:*) is allowed {', '.join(risky)} on "
                                        f"{acl.resource_type} {acl.resource_name!r}; grant named principals")


def _naming(s: SpecSet) -> Iterator[Problem]:
    pattern = s.cluster.conventions.topic_name
    if pattern is None:
        return
    compiled = re.compile(pattern)
    for t in s.topics:
        if not compiled.fullmatch(t.name) and t.derived_from is None:
            yield Problem(t.location, f"topic name {t.name!r} does not follow the convention /{pattern}/ "
                                      f"(cluster.conventions.topic_name)")


def _retention(s: SpecSet) -> Iterator[Problem]:
    low, high = s.cluster.conventions.min_retention_ms, s.cluster.conventions.max_retention_ms
    for t in s.topics:
        if "delete" not in t.config.get("cleanup.policy", "delete").split(","):
            continue  # a compacted changelog keeps the latest value per key, whatever retention.ms says
        value = int(t.config.get("retention.ms", kafka_default("retention.ms") or "-1"))
        shown = "unlimited" if value < 0 else human_duration_ms(value)
        if high is not None and (value < 0 or value > high):
            yield Problem(t.location, f"topic {t.name!r}: retention {shown} exceeds the maximum "
                                      f"{human_duration_ms(high)} (cluster.conventions.max_retention)")
        if low is not None and 0 <= value < low:
            yield Problem(t.location, f"topic {t.name!r}: retention {shown} is below the minimum "
                                      f"{human_duration_ms(low)} (cluster.conventions.min_retention)")


def _plaintext(s: SpecSet) -> Iterator[Problem]:
    from kraftform.cluster.config import NodePaths, render_properties  # the nodes' rendering: only this rule
    from kraftform.cluster.containers import docker_addressing

    topo = topology(s.cluster)
    addressing = docker_addressing(topo)
    for node in topo.nodes:
        props = render_properties(topo, node, addressing, NodePaths("/config", "/data"))
        protocols = {entry.split(":", 1)[1] for entry in props["listener.security.protocol.map"].split(",")}
        plain = sorted(protocols & {"PLAINTEXT", "SASL_PLAINTEXT"})
        if plain:
            yield Problem(s.cluster.location, f"node {node.name} would have a {'/'.join(plain)} listener")


def _quotas(s: SpecSet) -> Iterator[Problem]:
    limited = {q.entity.user for q in s.quotas if q.entity.user is not None}
    if DEFAULT_ENTITY in limited:
        return  # the default user quota covers every principal without one of its own
    for user in s.users:
        if user.name not in limited:
            yield Problem(user.location, f"user {user.name!r} has no client quota; a runaway client could "
                                         f"starve the others (add one, or a default `user: <default>` quota)")


RULES: tuple[Rule, ...] = (
    Rule("prod-replication", "topics have replication factor >= 3 and min.insync.replicas >= 2",
         frozenset({"prod"}), _replication),
    Rule("no-wildcard-write", "no allow rule gives User:* write, alter, create or delete",
         frozenset(ENVS), _wildcard_write),
    Rule("topic-naming", "topic names match cluster.conventions.topic_name", frozenset(ENVS), _naming),
    Rule("retention-bounds", "retention within cluster.conventions min_retention and max_retention",
         frozenset(ENVS), _retention),
    Rule("no-plaintext-listener", "every rendered listener uses TLS", frozenset(ENVS), _plaintext),
    Rule("quota-per-client", "every SCRAM user has a client quota (its own or the default)",
         frozenset({"prod"}), _quotas),
)


def lint(specs: SpecSet, env: Env) -> list[Finding]:
    """Every finding of the rules that apply to `env`, in file order."""
    findings = [Finding(rule.id, problem) for rule in RULES if env in rule.envs for problem in rule.check(specs)]
    return sorted(findings, key=lambda f: (f.problem, f.rule))
