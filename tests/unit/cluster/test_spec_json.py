"""The cluster section crosses to `pulumi up`'s node work as JSON, and comes back the same, whatever the engine
did to its numbers."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from kraftform.cluster.spec_json import cluster_from_json, cluster_to_json, from_json, to_json
from kraftform.declared import load_specs
from kraftform.specset.model import ClusterDefaults, ConnectSpec, EnvSecret, ExternalListener, Security

from ...conftest import EXAMPLE_SPECS, SpecsCopy
from ..specset.test_connect import with_connect


def as_the_engine_sends(value: Any) -> Any:
    """A protobuf Struct: every number a float."""
    if isinstance(value, dict):
        return {k: as_the_engine_sends(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_the_engine_sends(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def test_the_example_cluster_comes_back_equal_through_json_and_floats() -> None:
    spec = load_specs(EXAMPLE_SPECS).cluster
    sent = as_the_engine_sends(json.loads(json.dumps(cluster_to_json(spec))))
    assert sent["brokers"] == 3.0
    back = cluster_from_json(sent)
    assert back == spec and isinstance(back.brokers, int) and isinstance(back.racks, tuple)
    assert isinstance(back.defaults.min_insync_replicas, int)


def test_every_field_crosses_settings_per_node_and_nested_sections_included() -> None:
    spec = replace(load_specs(EXAMPLE_SPECS).cluster, brokers=4, node_config={"platform-broker-1": {"a": "1"}},
                   broker_config={"num.io.threads": "4"}, features={"group.version": 1}, metadata_version="4.2",
                   defaults=ClusterDefaults(2, 2, 1), quick_start=True,
                   security=Security(controller_auth="plain", external_listener=ExternalListener(True, "h", 29092)))
    back = cluster_from_json(as_the_engine_sends(cluster_to_json(spec)))
    assert back == spec
    assert back.features == {"group.version": 1} and isinstance(back.features["group.version"], int)
    assert back.security.external_listener.base_port == 29092


def test_a_connect_section_comes_back_equal_its_secret_references_included(specs_copy: SpecsCopy) -> None:
    """What `pulumi up`'s `ConnectCluster` is handed: a setting that is `{env: NAME}` stays a reference to the
    environment, never a plain value."""
    spec = load_specs(with_connect(specs_copy())).connect[0]
    sent = as_the_engine_sends(json.loads(json.dumps(to_json(spec))))
    back = from_json(ConnectSpec, sent)
    assert back == spec and isinstance(back.workers, int)
    assert back.connectors[1].config["api.password"] == EnvSecret("IMPORT_PASSWORD")
    assert back.connectors[1].config["topic"] == "orders.status.v1"
