"""Schemas as code on a real registry (Apicurio Registry built from Maven Central, `kraftform registry up`): the
subjects planned and applied with `kraftform plan` and `apply` as users run them, the registry's own compatibility
check deciding, drift shown, nothing anonymous, subjects kept across a restart, and confluent-kafka's Avro
serializer and deserializer speaking the Confluent wire format through it. The tests run in order on one registry.
"""

from __future__ import annotations

import dataclasses
import json
import ssl
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from kraftform.cluster.certificates import issue, make_ca
from kraftform.errors import AuthorizationDenied
from kraftform.runtime.nodes.deployment import admin_config
from kraftform.runtime.registry.running import LocalRegistry
from kraftform.specset.model import RegistrySpec
from kraftform.verification.secretscan import CommandLineSampler

from .conftest import ORDER, SUBJECT, TOPIC, Registry

pytestmark = pytest.mark.integration

NOTE_WITH_DEFAULT: dict[str, Any] = {
    **ORDER, "fields": [*ORDER["fields"], {"name": "note", "type": "string", "default": ""}]}


def test_a_declared_schema_is_registered_and_a_compatible_change_once_then_apply_is_empty(registry: Registry) -> None:
    applied = registry.kraftform("apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert f"create subject {SUBJECT}" in applied.stdout and "compatibility BACKWARD" in applied.stdout
    client = registry.client()
    assert client.versions(SUBJECT) == [1] and client.compatibility(SUBJECT) == "BACKWARD"
    registry.write(NOTE_WITH_DEFAULT)
    planned = registry.kraftform("plan")
    assert planned.returncode == 2, planned.stdout + planned.stderr
    assert "[safe] update subject" in planned.stdout
    assert "version 2, checked compatible by the registry under BACKWARD" in planned.stdout, planned.stdout
    assert 'schema: version 1 -> version 2: + note (string, default "")' in planned.stdout, planned.stdout
    applied = registry.kraftform("apply", "--auto-approve")
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert client.versions(SUBJECT) == [1, 2]
    assert json.loads(client.version(SUBJECT).schema) == NOTE_WITH_DEFAULT
    again = registry.kraftform("apply", "--auto-approve")
    assert again.returncode == 0 and "No changes" in again.stdout, again.stdout + again.stderr
    assert client.versions(SUBJECT) == [1, 2]


def test_an_incompatible_change_is_refused_in_the_registrys_words_and_nothing_is_applied(registry: Registry) -> None:
    required: dict[str, Any] = {**ORDER, "fields": [*NOTE_WITH_DEFAULT["fields"], {"name": "due", "type": "long"}]}
    registry.write(required)
    topics = registry.specs / "topics.yaml"
    before = topics.read_text()
    topics.write_text(before.replace("topics:\n", "topics:\n- name: orders.other\n  partitions: 1\n"))
    try:
        planned = registry.kraftform("plan")
        assert planned.returncode == 2 and "[destructive] refuse subject" in planned.stdout, planned.stdout
        assert "refused by the registry under BACKWARD against version 2" in planned.stdout
        assert "Unable to read schema" in planned.stdout, planned.stdout  # Apicurio's own reason
        applied = registry.kraftform("apply", "--auto-approve")
        assert applied.returncode == 1 and "nothing was applied" in applied.stderr, applied.stdout + applied.stderr
        from confluent_kafka.admin import AdminClient

        listed = AdminClient(admin_config(registry.state).librdkafka()).list_topics(timeout=30).topics
        assert "orders.other" not in listed  # the topic planned beside it was not created either
        assert registry.client().versions(SUBJECT) == [1, 2]
    finally:
        topics.write_text(before)
        registry.write(NOTE_WITH_DEFAULT)


def test_a_version_registered_by_hand_is_drift_that_plan_shows_and_apply_refuses(registry: Registry) -> None:
    by_hand: dict[str, Any] = {
        **ORDER, "fields": [*NOTE_WITH_DEFAULT["fields"], {"name": "x", "type": "int", "default": 0}]}
    registry.client().register(SUBJECT, json.dumps(by_hand), "AVRO")
    planned = registry.kraftform("plan")
    assert planned.returncode == 2, planned.stdout + planned.stderr
    assert "drift: version(s) 3 registered outside the specs after the declared version 2" in planned.stdout
    applied = registry.kraftform("apply", "--auto-approve", "--allow-destructive")
    assert applied.returncode == 1 and registry.client().versions(SUBJECT) == [1, 2, 3]
    registry.write(by_hand)  # declared as it is: the drift is the specs' now
    assert registry.kraftform("plan").returncode == 0


def test_a_level_loosened_is_disruptive_and_turning_the_check_off_needs_allow_destructive(
        registry: Registry) -> None:
    schema = json.loads((registry.specs / "schemas" / "order.avsc").read_text())
    registry.write(schema, compatibility="NONE")
    planned = registry.kraftform("plan")
    assert "[destructive] update subject" in planned.stdout and "BACKWARD -> NONE" in planned.stdout, planned.stdout
    refused = registry.kraftform("apply", "--auto-approve")
    assert refused.returncode == 1 and "need --allow-destructive" in refused.stderr, refused.stderr
    assert registry.client().compatibility(SUBJECT) == "BACKWARD"
    registry.write(schema, compatibility="FORWARD")
    planned = registry.kraftform("plan")
    assert "[disruptive] update subject" in planned.stdout and "BACKWARD -> FORWARD" in planned.stdout
    assert registry.kraftform("apply", "--auto-approve").returncode == 0
    assert registry.client().compatibility(SUBJECT) == "FORWARD"
    registry.write(schema)
    assert registry.kraftform("apply", "--auto-approve").returncode == 0
    assert registry.client().compatibility(SUBJECT) == "BACKWARD"


def test_a_subject_of_an_owned_topic_the_specs_do_not_declare_goes_only_when_allowed(registry: Registry) -> None:
    registry.client().register(f"{TOPIC}-key", json.dumps("string"), "AVRO")
    planned = registry.kraftform("plan")
    assert f"[destructive] delete subject {TOPIC}-key" in planned.stdout, planned.stdout
    assert registry.kraftform("apply", "--auto-approve").returncode == 1
    assert f"{TOPIC}-key" in registry.client().subjects()
    assert registry.kraftform("apply", "--auto-approve", "--allow-destructive").returncode == 0
    assert registry.client().subjects() == [SUBJECT]


def _get(url: str, context: ssl.SSLContext | None) -> int:
    with urllib.request.urlopen(url, timeout=10, context=context) as answer:
        return int(answer.status)


def test_nothing_anonymous_reaches_the_registry_and_only_kraftform_writes(registry: Registry, tmp_path: Path) -> None:
    client = registry.client()
    subjects = f"{client.url}/subjects"
    assert _get(subjects, client._context()) == 200  # kraftform's own certificate
    made = registry.kraftform("registry certificate", "--name", "orders-service", "--out", str(tmp_path))
    assert made.returncode == 0, made.stdout + made.stderr
    reader = dataclasses.replace(client, cert_path=str(tmp_path / "orders-service.pem"),
                                 key_path=str(tmp_path / "orders-service.key"))
    assert reader.subjects() == client.subjects() and reader.version(SUBJECT) == client.version(SUBJECT)
    with pytest.raises(AuthorizationDenied):
        reader.register(SUBJECT, json.dumps({**ORDER, "name": "Other"}), "AVRO")
    with pytest.raises(AuthorizationDenied):
        reader.set_compatibility(SUBJECT, "NONE")
    with pytest.raises(AuthorizationDenied):
        reader.delete_subject(SUBJECT)
    assert client.compatibility(SUBJECT) == "BACKWARD" and client.subjects() == [SUBJECT]
    with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
        _get(subjects, ssl.create_default_context(cafile=client.ca_path))  # no certificate
    stranger = issue(make_ca("elsewhere"), "kraftform")  # the same name, another CA
    (tmp_path / "c.pem").write_text(stranger.cert_pem)
    (tmp_path / "c.key").write_text(stranger.key_pem)
    context = ssl.create_default_context(cafile=client.ca_path)
    context.load_cert_chain(tmp_path / "c.pem", tmp_path / "c.key")
    with pytest.raises((ssl.SSLError, urllib.error.URLError, ConnectionError)):
        _get(subjects, context)
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        _get(subjects.replace("https://", "http://"), None)  # no plain HTTP


def test_restarted_it_keeps_its_subjects_and_no_password_is_on_a_command_line(registry: Registry) -> None:
    client = registry.client()
    before = {s: client.versions(s) for s in client.subjects()}
    (registry.specs / "broken.yaml").write_text("topics: [\n")  # specs that no longer load still let it stop
    try:
        down = registry.kraftform("registry down")
    finally:
        (registry.specs / "broken.yaml").unlink()
    assert down.returncode == 0 and "stopped" in down.stdout, down.stdout + down.stderr
    assert not LocalRegistry(registry.state, RegistrySpec()).running()
    with CommandLineSampler(0.02) as sampler:
        up = registry.kraftform("registry up")
    assert up.returncode == 0, up.stdout + up.stderr
    assert {s: client.versions(s) for s in client.subjects()} == before
    assert registry.kraftform("plan").returncode == 0
    store = json.loads((registry.state / "registry" / "secrets.json").read_text())["store_password"]
    assert any("-Dkraftform.registry.dir=" in line for line in sampler.seen)  # the sampler saw the JVM start
    assert not [line for line in sampler.seen if store in line]


def test_confluent_kafkas_avro_serializer_and_deserializer_speak_the_wire_format_through_it(
        registry: Registry, tmp_path: Path) -> None:
    client = registry.client()
    # A producer's own certificate, which reads the declared versions and registers nothing.
    assert registry.kraftform("registry certificate", "--name", "shop", "--out", str(tmp_path)).returncode == 0
    conf = {"url": client.url, "ssl.ca.location": client.ca_path,
            "ssl.certificate.location": str(tmp_path / "shop.pem"), "ssl.key.location": str(tmp_path / "shop.key")}
    schemas = SchemaRegistryClient(conf)
    latest = client.version(SUBJECT)
    # Producers use the declared version: kraftform registers, they never do.
    serializer = AvroSerializer(schemas, latest.schema, conf={"auto.register.schemas": False,
                                                              "use.latest.version": True})
    kafka = admin_config(registry.state).librdkafka()
    producer = Producer(kafka)
    sent = [{"id": f"o-{i}", "qty": i, "note": "", "x": i} for i in range(20)]
    for record in sent:
        producer.produce(TOPIC, serializer(record, SerializationContext(TOPIC, MessageField.VALUE)))
    assert producer.flush(30) == 0
    consumer = Consumer({**kafka, "group.id": f"registry-{uuid.uuid4()}", "auto.offset.reset": "earliest"})
    consumer.subscribe([TOPIC])
    deserializer = AvroDeserializer(schemas)
    received: list[Any] = []
    raw: list[bytes] = []
    try:
        while len(received) < len(sent):
            message = consumer.poll(30)
            assert message is not None, f"{len(received)} of {len(sent)} records read"
            assert message.error() is None, message.error()
            value = message.value()
            assert value is not None
            raw.append(value)
            received.append(deserializer(value, SerializationContext(TOPIC, MessageField.VALUE)))
    finally:
        consumer.close()
    assert sorted(received, key=lambda r: r["qty"]) == sent
    assert {(v[0], int.from_bytes(v[1:5], "big")) for v in raw} == {(0, latest.id)}  # magic byte, schema id
