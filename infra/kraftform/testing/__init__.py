"""Ephemeral secure clusters from the production specs, for users' own test suites.

`kraftform.testing.ephemeral_cluster(specs_dir)` is a context manager (unittest, scripts, notebooks); the pytest
plugin (`kraftform.testing.plugin`, registered through the `pytest11` entry point, so a project only installs
kraftform) hands the same cluster to tests as the session fixture `kafka_cluster`. The cluster is the specs'
own, security never dropped: SASL_SSL with SCRAM for clients, mutual TLS between nodes, the deny-by-default
authorizer, and the declared topics, users, ACLs and quotas applied. Docs: docs/testing.md.
"""

from __future__ import annotations

from typing import Any

__all__ = ["EphemeralCluster", "ephemeral_cluster"]


def __getattr__(name: str) -> Any:
    # Lazily: pytest imports the plugin module (and so this package) in every session of a project that has
    # kraftform installed; the cluster code loads only when a test asks for a cluster.
    if name in __all__:
        from kraftform.testing import cluster

        return getattr(cluster, name)
    raise AttributeError(name)
