"""Spec sets for the killed-apply trials: topics, users, ACLs and quotas that change from trial to trial.

Each trial declares a random part of a fixed universe (topics under one prefix, a handful of users), so
going from one trial to the next creates, updates and deletes of every kind. What never changes per name
is what Kafka cannot undo or what would only add slow replica moves: a topic's partitions and replication.
Every user of the universe is declared in every trial (as a SCRAM user or, when not chosen, as a principal
without access), so kraftform owns, and deletes, whatever a trial drops.
"""

from __future__ import annotations

import random
from typing import Any

TOPICS = 200
USERS = 8
RETENTIONS = ("1d", "2d", "7d")
RATES = ("1MB/s", "2MB/s", "5MB/s")


def user_name(prefix: str, index: int) -> str:
    return f"{prefix}-u{index}"


def password_variable(index: int) -> str:
    return f"KRAFTFORM_VERIFY_PASSWORD_U{index}"


def trial_sections(topic_prefix: str, user_prefix: str, brokers: int, trial: int, seed: int
                   ) -> dict[str, list[dict[str, Any]]]:
    """Sections (topics, users, principals, acls, quotas) of trial `trial`; `topic_prefix` ends with '.'."""
    rng = random.Random(seed * 100_003 + trial)
    topics = []
    for k in sorted(rng.sample(range(TOPICS), rng.randint(TOPICS // 3, TOPICS * 3 // 4))):
        rf = max(1, min(3, brokers) - k % 2)
        topics.append({"name": f"{topic_prefix}t{k:03d}", "partitions": 1 + k % 3, "replication_factor": rf,
                       "config": {"retention.ms": rng.choice(RETENTIONS), "min.insync.replicas": 1}})
    chosen = sorted(rng.sample(range(USERS), rng.randint(2, USERS - 2)))
    users = [{"name": user_name(user_prefix, j), "password": {"env": password_variable(j)}} for j in chosen]
    principals = [{"name": f"User:{user_name(user_prefix, j)}"} for j in range(USERS) if j not in chosen]
    acls: list[dict[str, Any]] = []
    quotas = []
    for j in chosen:
        principal = f"User:{user_name(user_prefix, j)}"
        operations = ["read", "describe"] + (["write"] if rng.random() < 0.5 else [])
        acls.append({"principal": principal, "resource": {"type": "topic", "name": topic_prefix,
                                                           "pattern": "prefixed"}, "operations": operations})
        acls.append({"principal": principal, "resource": {"type": "group", "name": user_name(user_prefix, j),
                                                           "pattern": "prefixed"}, "operations": ["read"]})
        quotas.append({"entity": {"user": user_name(user_prefix, j)}, "producer_byte_rate": rng.choice(RATES),
                       "consumer_byte_rate": rng.choice(RATES)})
    return {"topics": topics, "users": users, "principals": principals, "acls": acls, "quotas": quotas}


def empty_sections(user_prefix: str) -> dict[str, list[dict[str, Any]]]:
    """Every user of the universe declared with nothing: applying it removes all a trial made."""
    return {"principals": [{"name": f"User:{user_name(user_prefix, j)}"} for j in range(USERS)]}
