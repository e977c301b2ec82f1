"""Defaults are defined once, by the model's dataclasses; the JSON Schema documents them and must agree.

Every `default` the schema states is listed here with the field that really decides it, so a default
added to the schema without the model (or changed in one place only) fails.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kraftform.declared import load_specs
from kraftform.specset import model
from kraftform.units import parse_size

SCHEMAS = Path(__file__).resolve().parents[3] / "specs" / "schema"

#: (schema file, property path) -> (dataclass, field, how the schema writes the value).
DECIDED_BY: dict[tuple[str, str], tuple[type, str, Any]] = {
    ("acl", "resource.pattern"): (model.AclSpec, "pattern_type", str),
    ("acl", "permission"): (model.AclSpec, "permission", str),
    ("acl", "host"): (model.AclSpec, "host", str),
    ("cluster", "mode"): (model.ClusterSpec, "mode", str),
    ("cluster", "controllers"): (model.ClusterSpec, "controllers", int),
    ("cluster", "host_failures_tolerated"): (model.ClusterSpec, "host_failures_tolerated", int),
    ("cluster", "resources.broker_heap"): (model.ClusterSpec, "broker_heap_bytes", parse_size),
    ("cluster", "resources.controller_heap"): (model.ClusterSpec, "controller_heap_bytes", parse_size),
    ("cluster", "security.sasl_mechanism"): (model.Security, "sasl_mechanism", str),
    ("cluster", "security.controller_auth"): (model.Security, "controller_auth", str),
    ("cluster", "security.admin_user"): (model.Security, "admin_user", str),
    ("cluster", "security.external_listener.enabled"): (model.ExternalListener, "enabled", bool),
    ("cluster", "security.external_listener.host"): (model.ExternalListener, "host", str),
    ("cluster", "security.external_listener.base_port"): (model.ExternalListener, "base_port", int),
    ("cluster", "managed_scope.acl_principals"): (model.ManagedScope, "acl_principals", str),
    ("cluster", "managed_scope.acl_resources"): (model.ManagedScope, "acl_resources", str),
    ("cluster", "load.consumer_groups"): (model.Load, "consumer_groups", int),
    ("cluster", "placement.even_topics"): (model.Placement, "even_topics", bool),
    ("cluster", "spark.master"): (model.SparkSpec, "master", str),
    ("cluster", "spark.workers"): (model.SparkSpec, "workers", int),
    ("cluster", "spark.worker_cores"): (model.SparkSpec, "worker_cores", int),
    ("cluster", "spark.worker_memory"): (model.SparkSpec, "worker_memory_bytes", parse_size),
    ("cluster", "load.controller_failures_tolerated"): (model.Load, "controller_failures_tolerated", int),
    ("connect", "workers"): (model.ConnectSpec, "workers", int),
    ("connect", "rest_port"): (model.ConnectSpec, "rest_port", int),
    ("connect", "internal_topics.offsets_partitions"): (model.ConnectSpec, "offsets_partitions", int),
    ("connect", "internal_topics.status_partitions"): (model.ConnectSpec, "status_partitions", int),
    ("consumer", "starting_offsets"): (model.ConsumerSpec, "starting_offsets", str),
    ("consumer", "cores"): (model.ConsumerSpec, "cores", int),
    ("user", "mechanism"): (model.UserSpec, "mechanism", str),
    ("user", "iterations"): (model.UserSpec, "iterations", int),
    ("user", "password_version"): (model.UserSpec, "password_version", int),
}


def _defaults(node: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, Any]]:
    """(dotted property path, documented default) for every property below `node`."""
    if isinstance(node, dict):
        for name, sub in node.get("properties", {}).items():
            if isinstance(sub, dict) and "default" in sub:
                yield ".".join((*path, name)), sub["default"]
            yield from _defaults(sub, (*path, name))
        for key in ("items", "$defs"):
            if isinstance(node.get(key), dict):
                yield from _defaults(node[key], path)


def _documented() -> dict[tuple[str, str], Any]:
    return {(f.name.removesuffix(".schema.json"), where): value for f in sorted(SCHEMAS.glob("*.schema.json"))
            for where, value in _defaults(json.loads(f.read_text()))}


def test_every_documented_default_is_decided_by_a_model_field() -> None:
    documented = _documented()
    assert len(documented) >= 20, documented  # the walk found the schema's defaults
    assert set(documented) == set(DECIDED_BY), set(documented) ^ set(DECIDED_BY)


@pytest.mark.parametrize("where", sorted(DECIDED_BY))
def test_the_schema_documents_the_models_default(where: tuple[str, str]) -> None:
    cls, name, convert = DECIDED_BY[where]
    field = next(f for f in dataclasses.fields(cls) if f.name == name)
    assert convert(_documented()[where]) == field.default, (where, field.default)


def test_cluster_defaults_follow_the_broker_count_wherever_a_cluster_is_made(tmp_path: Path) -> None:
    """A ClusterSpec made in code and one loaded from YAML without `defaults` get the same topic defaults."""
    (tmp_path / "cluster.yaml").write_text("cluster:\n  name: c\n  brokers: 2\n")
    loaded = load_specs(tmp_path).cluster.defaults
    made = model.ClusterSpec("c", 2, "4.3.1").defaults
    assert loaded == made == model.ClusterDefaults(partitions=1, replication_factor=2, min_insync_replicas=2)
    assert model.ClusterSpec("c", 1, "4.3.1").defaults.min_insync_replicas == 1
