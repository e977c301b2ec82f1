"""The specs a test cluster runs: the production specs with a name of their own, and, for the `fast` topology,
fewer processes. Pure.

`faithful` keeps the cluster section as declared (dedicated controllers, racks, heaps, settings). `fast` runs one
combined node (one JVM: broker and controller) with the same listeners, users, ACLs, quotas and authorizer;
a topic's replication factor and min.insync.replicas are capped at what one broker can hold, which is the one
thing a test on it cannot see. Every user gets a password made for the cluster (the production secrets are
not needed, nor wanted, in a test run). Both start their JVMs for a life of minutes (`ClusterSpec.quick_start`).
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from kraftform.specset.model import ClusterDefaults, SecretRef, SpecSet, TopicSpec

Topology = Literal["faithful", "fast"]
TOPOLOGIES: tuple[Topology, ...] = ("faithful", "fast")
MIN_ISR = "min.insync.replicas"


def password_variable(cluster: str, user: str) -> str:
    """The environment variable a test cluster's user's password is read from (set by the test cluster)."""
    return "KRAFTFORM_TEST_" + "".join(c if c.isalnum() else "_" for c in f"{cluster}_{user}").upper()


def _capped(topic: TopicSpec, brokers: int) -> TopicSpec:
    rf = min(topic.replication_factor, brokers)
    config = dict(topic.config)
    if MIN_ISR in config:
        config[MIN_ISR] = str(min(int(config[MIN_ISR]), rf))
    return dataclasses.replace(topic, replication_factor=rf, config=config)


def for_tests(specs: SpecSet, topology: Topology, name: str) -> SpecSet:
    """`specs` as a test cluster named `name` runs them."""
    if topology not in TOPOLOGIES:
        raise ValueError(f"unknown topology {topology!r} (choose from {', '.join(TOPOLOGIES)})")
    cluster = specs.cluster
    old = f"{cluster.name}-"
    # Per-node settings follow the nodes' new names (they start with the cluster's).
    node_config = {f"{name}-{node[len(old):]}" if node.startswith(old) else node: settings
                   for node, settings in cluster.node_config.items()}
    cluster = dataclasses.replace(cluster, name=name, node_config=node_config, quick_start=True)
    topics = specs.topics
    if topology == "fast":
        cluster = dataclasses.replace(cluster, mode="combined", brokers=1, controllers=1, racks=(), node_config={},
                                      defaults=ClusterDefaults.for_brokers(1, cluster.defaults.partitions))
        topics = tuple(_capped(t, 1) for t in topics)
    users = tuple(dataclasses.replace(u, password=SecretRef("env", password_variable(name, u.name)))
                  for u in specs.users)
    return dataclasses.replace(specs, cluster=cluster, topics=topics, users=users)
