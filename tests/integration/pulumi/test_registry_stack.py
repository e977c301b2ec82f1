"""The schema registry and the subjects as `pulumi up` runs them: `SchemaRegistryProvider` and `SubjectsProvider` in
Pulumi's provider host, driven over gRPC with values as the engine sends them (check, then diff, then create or
update with the checked inputs), the registry a container on the shared Docker cluster's network, the subjects
planned and applied against it. Checked from outside: the container, and the registry's own answers through a
client of the test's.

One test, in the order a stack lives: each step needs the registry the steps before left."""

from __future__ import annotations

import json
import secrets
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi.runtime import proto

from kraftform.declared import load_specs
from kraftform.pulumi.registry import SchemaRegistryProvider, SubjectsProvider, registry_props, subjects_props
from kraftform.registry.rest import RegistryRest
from kraftform.runtime.engines.engine import docker_client
from kraftform.runtime.nodes import deployment as dep
from kraftform.runtime.nodes.local import listening
from kraftform.runtime.registry.container import data_volume, registry_container
from kraftform.specset.model import RegistrySpec

from ...conftest import REPO
from ..conftest import LiveCluster
from .engine import ProviderHost

pytestmark = pytest.mark.integration

TOPIC = "stack.orders"
SUBJECT = f"{TOPIC}-value"
ORDER: dict[str, Any] = {"type": "record", "name": "Order", "namespace": "shop",
                         "fields": [{"name": "id", "type": "string"}, {"name": "qty", "type": "int"}]}


class Specs:
    """A spec directory as a user edits it: a topic with a value schema, an Avro consumer reading `qty`."""

    def __init__(self, root: Path, cluster: str) -> None:
        self.root = root
        (root / "schemas").mkdir(parents=True)
        (root / "cluster.yaml").write_text(yaml.safe_dump({
            "cluster": {"name": cluster, "mode": "combined", "controllers": 1, "brokers": 1,
                        "defaults": {"replication_factor": 1, "min_insync_replicas": 1}},
            "registry": {"port": 18000}}))
        (root / "topics.yaml").write_text(yaml.safe_dump({
            "topics": [{"name": TOPIC, "partitions": 1, "schemas": {"value": "schemas/order.avsc"}}],
            "users": [{"name": "stack-reader", "password": {"env": "KRAFTFORM_PASSWORD_STACK_READER"}}],
            "acls": [{"principal": "User:stack-reader", "resource": {"type": "topic", "name": TOPIC},
                      "operations": ["read"]},
                     {"principal": "User:stack-reader", "resource": {"type": "group", "name": "qty-",
                                                                      "pattern": "prefixed"}, "operations": ["read"]}],
            "consumers": [{"name": "qty-sums", "topics": [TOPIC], "user": "stack-reader",
                           "value": {"format": "avro"}, "query": "SELECT id, qty * 2 AS doubled\nFROM input\n",
                           "sink": {"type": "parquet", "path": "qty"}}]}))
        self.write(ORDER)

    def write(self, schema: dict[str, Any]) -> None:
        (self.root / "schemas" / "order.avsc").write_text(json.dumps(schema, indent=2))

    def news(self, login: dict[str, str]) -> dict[str, Any]:
        specs = load_specs(self.root)
        return subjects_props(specs.subjects, specs.consumers, [t.name for t in specs.topics], login, False)


def _free_port() -> int:
    return next(p for p in range(28300, 28400, 2) if not listening("127.0.0.1", p)
                and not listening("127.0.0.1", p + 1))


def _step(host: ProviderHost, provider: Any, name: str, id_: str, outputs: dict[str, Any], news: dict[str, Any]
          ) -> tuple[Any, dict[str, Any], list[tuple[str, str]]]:
    """`pulumi up` of one resource: check, diff with the checked inputs, update when the diff says so."""
    checked, failures = host.check(provider, name, outputs, news)
    if failures:
        return None, outputs, failures
    diff = host.diff(provider, name, id_, outputs, checked)
    if diff.changes == proto.DiffResponse.DIFF_SOME:
        outputs = host.update(provider, name, id_, outputs, checked)
    return diff, outputs, []


def test_a_stacks_registry_and_subjects_plan_in_preview_apply_once_and_refuse_what_breaks_readers(
        docker_cluster: LiveCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KRAFTFORM_PASSWORD_STACK_READER", secrets.token_urlsafe(12))
    deployment = docker_cluster.deployment
    ca = dep.load_secrets(docker_cluster.state_dir).ca
    # A name of the stack's own beside the shared cluster, on its network: the CLI's registry test has the other.
    stack = f"{docker_cluster.spec.name}-stack"
    port = _free_port()
    props = registry_props(RegistrySpec(port=port), stack, str(deployment.extra["network"]),
                           str(deployment.extra["image"]), {"cert": ca.cert_pem, "key": ca.key_pem})
    host = ProviderHost(REPO, tmp_path / "host-tmp")
    docker = docker_client()
    registry_id, subjects_id = "", ""
    registry_out: dict[str, Any] = {}
    subjects_out: dict[str, Any] = {}
    try:
        # The registry: made with its TLS material kept as outputs; its port published on loopback only.
        registry_id, registry_out = host.create(SchemaRegistryProvider(), "schema-registry", props)
        container = docker.containers.get(registry_container(stack))
        assert container.status == "running"
        assert container.attrs["HostConfig"]["PortBindings"] == {
            f"{port}/tcp": [{"HostIp": "127.0.0.1", "HostPort": str(port)}]}
        login = registry_out["client"]
        assert login["url"] == f"https://127.0.0.1:{port}/apis/ccompat/v6" and "PRIVATE KEY" in login["key"]
        (tmp_path / "ca.pem").write_text(login["ca"])
        (tmp_path / "c.pem").write_text(login["cert"])
        (tmp_path / "c.key").write_text(login["key"])
        rest = RegistryRest(login["url"], str(tmp_path / "ca.pem"), str(tmp_path / "c.pem"), str(tmp_path / "c.key"))
        assert rest.subjects() == []
        unchanged = host.diff(SchemaRegistryProvider(), "schema-registry", registry_id, registry_out, props)
        assert unchanged.changes == proto.DiffResponse.DIFF_NONE

        # The first preview: the version to register is in the checked inputs (what `pulumi preview` shows).
        specs = Specs(tmp_path / "specs", stack)
        checked, failures = host.check(SubjectsProvider(), "subjects", {}, specs.news(login))
        assert failures == [] and list(checked["plan"]) == [SUBJECT]
        assert "version 1, compatibility BACKWARD" in checked["plan"][SUBJECT]
        subjects_id, subjects_out = host.create(SubjectsProvider(), "subjects", checked)
        assert rest.versions(SUBJECT) == [1] and rest.compatibility(SUBJECT) == "BACKWARD"
        [(schema_id, schema)] = subjects_out["writers"][TOPIC].items()
        assert json.loads(schema) == ORDER and rest.version(SUBJECT).id == int(schema_id)
        # Idempotent: a second up changes nothing.
        diff, subjects_out, failures = _step(host, SubjectsProvider(), "subjects", subjects_id, subjects_out,
                                             specs.news(login))
        assert failures == [] and diff.changes == proto.DiffResponse.DIFF_NONE

        # A compatible version: planned in the preview, registered once, then nothing.
        added = {**ORDER, "fields": [*ORDER["fields"], {"name": "note", "type": ["null", "string"], "default": None}]}
        specs.write(added)
        checked, failures = host.check(SubjectsProvider(), "subjects", subjects_out, specs.news(login))
        assert failures == [] and "version 2, checked compatible by the registry" in checked["plan"][SUBJECT]
        diff, subjects_out, _ = _step(host, SubjectsProvider(), "subjects", subjects_id, subjects_out,
                                      specs.news(login))
        assert diff.changes == proto.DiffResponse.DIFF_SOME and rest.versions(SUBJECT) == [1, 2]
        assert len(subjects_out["writers"][TOPIC]) == 2
        diff, subjects_out, _ = _step(host, SubjectsProvider(), "subjects", subjects_id, subjects_out,
                                      specs.news(login))
        assert diff.changes == proto.DiffResponse.DIFF_NONE

        # Incompatible (a type changed): the preview fails in the registry's words; nothing registered.
        specs.write({**added, "fields": [{"name": "id", "type": "long"}, *added["fields"][1:]]})
        _, _, failures = _step(host, SubjectsProvider(), "subjects", subjects_id, subjects_out, specs.news(login))
        assert len(failures) == 1 and failures[0][1].startswith(f"subject {SUBJECT}: ")
        assert "refused by the registry under BACKWARD against version 2" in failures[0][1]
        # `qty` widened to a long: the registry's BACKWARD allows it (Avro promotes an int), the consumer reading
        # it as an int column does not.
        specs.write({**added, "fields": [{**f, "type": "long"} if f["name"] == "qty" else f for f in added["fields"]]})
        _, _, failures = _step(host, SubjectsProvider(), "subjects", subjects_id, subjects_out, specs.news(login))
        assert len(failures) == 1 and "breaks what declared consumers read" in failures[0][1]
        assert "qty-sums" in failures[0][1], failures
        assert rest.versions(SUBJECT) == [1, 2]

        # Drift: a subject deleted by hand is a change the next up repairs; a version registered by hand after
        # the declared one is refused (kraftform never deletes a version).
        specs.write(added)
        rest.delete_subject(SUBJECT)
        diff, subjects_out, failures = _step(host, SubjectsProvider(), "subjects", subjects_id, subjects_out,
                                             specs.news(login))
        assert failures == [] and diff.changes == proto.DiffResponse.DIFF_SOME
        assert rest.subjects() == [SUBJECT]
        rest.register(SUBJECT, json.dumps({**added, "fields": [*added["fields"], {
            "name": "by_hand", "type": "int", "default": 0}]}), "AVRO")
        _, _, failures = _step(host, SubjectsProvider(), "subjects", subjects_id, subjects_out, specs.news(login))
        assert len(failures) == 1 and "drift: version(s)" in failures[0][1] and "outside the specs" in failures[0][1]

        # The registry's container stopped by hand: a change; the update starts it with its subjects.
        docker.containers.get(registry_container(stack)).stop(timeout=30)
        diff = host.diff(SchemaRegistryProvider(), "schema-registry", registry_id, registry_out, props)
        assert diff.changes == proto.DiffResponse.DIFF_SOME
        registry_out = host.update(SchemaRegistryProvider(), "schema-registry", registry_id, registry_out, props)
        assert registry_out["client"]["cert"] == login["cert"]  # the same certificates: clients keep them
        assert rest.subjects() == [SUBJECT]

        # Destroy: the subjects of the stack's topics, then the registry's container and volume.
        host.delete(SubjectsProvider(), "subjects", subjects_id, subjects_out)
        subjects_id = ""
        assert rest.subjects() == []
        host.delete(SchemaRegistryProvider(), "schema-registry", registry_id, registry_out)
        registry_id = ""
        assert not docker.containers.list(all=True, filters={"name": f"^{registry_container(stack)}$"})
        assert not docker.volumes.list(filters={"name": f"^{data_volume(stack)}$"})
    finally:
        try:
            if registry_id:
                host.delete(SchemaRegistryProvider(), "schema-registry", registry_id, registry_out)
        finally:
            host.close()
