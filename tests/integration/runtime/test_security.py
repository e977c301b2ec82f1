"""The secure cluster, tested as an attacker and an operator would: both runtimes pass the same tests."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from confluent_kafka.cimpl import NewTopic

from kraftform.cluster.certificates import KeyPair, issue, make_ca
from kraftform.errors import KafkaRequestFailed
from kraftform.kafka.health import describe_health, poll_health, round_trip
from kraftform.runtime.nodes.deployment import load_secrets
from kraftform.runtime.nodes.tools import METADATA_QUORUM, run_kafka_tool
from kraftform.runtime.registry.base import CLIENT_NAME as REGISTRY_CLIENT

from ..conftest import LiveCluster, unique

pytestmark = pytest.mark.integration


def _metadata_error(conf: dict[str, Any]) -> str:
    """Try to read metadata; return every error the client saw (the test asserts it failed, and why).

    librdkafka reports the cause (authentication, TLS) through `error_cb`; the metadata call itself
    only says the brokers were unreachable.
    """
    seen: list[str] = []
    with_callback: dict[str, Any] = {**conf, "error_cb": lambda err: seen.append(str(err))}
    admin = AdminClient(with_callback)
    try:
        admin.list_topics(timeout=8)
    except KafkaException as exc:
        seen.append(str(exc.args[0]))
    admin.poll(1)  # serve the queued error callbacks
    return " | ".join(seen)


def test_admin_over_sasl_ssl_sees_every_broker_and_round_trips(cluster: LiveCluster) -> None:
    health = describe_health(cluster.connection)
    assert health.brokers == (1, 2, 3)
    assert cluster.admin["security.protocol"] == "SASL_SSL"
    assert round_trip(cluster.connection, 3) < 30


def test_plaintext_connection_fails(cluster: LiveCluster) -> None:
    conf = {k: v for k, v in cluster.admin.items() if not k.startswith(("sasl", "ssl"))}
    error = _metadata_error({**conf, "security.protocol": "PLAINTEXT"})
    assert "Failed to get metadata" in error, error


def test_unknown_user_and_wrong_password_are_rejected(cluster: LiveCluster) -> None:
    for overrides in ({"sasl.username": "nobody"}, {"sasl.password": "not-the-password"}):
        error = _metadata_error(cluster.client(**overrides))
        assert "Authentication failed" in error and "invalid credentials" in error, (overrides.keys(), error)


def test_client_that_does_not_trust_the_ca_is_rejected(cluster: LiveCluster, tmp_path) -> None:  # type: ignore[no-untyped-def]
    other_ca = tmp_path / "other-ca.pem"
    other_ca.write_text(make_ca("someone-else").cert_pem)
    error = _metadata_error(cluster.client(**{"ssl.ca.location": str(other_ca)}))
    assert "certificate verify failed" in error, error


def test_user_without_acls_is_denied_read_and_write(cluster: LiveCluster) -> None:
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    admin = AdminClient(cluster.admin)
    user, password, topic = unique("nobody").replace(".", "-"), "pw-" + unique(), unique("it.denied")
    upsert = UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192),
                                          password.encode())
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(timeout=30)
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(timeout=30)
    conf = cluster.client(**{"sasl.username": user, "sasl.password": password})

    errors: list[KafkaError] = []
    producer = Producer({**conf, "message.timeout.ms": "10000"})
    deadline = time.monotonic() + 60  # the new credential reaches every broker within moments
    while not errors and time.monotonic() < deadline:
        producer.produce(topic, b"x", on_delivery=lambda err, _msg: errors.append(err) if err else None)
        producer.flush(15)
    assert errors and errors[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, errors

    # Read: a record the admin wrote is there, and this user never gets it.
    admin_producer = Producer({**cluster.admin, "acks": "all"})
    admin_producer.produce(topic, b"secret-record")
    assert admin_producer.flush(30) == 0
    consumer = Consumer({**conf, "group.id": unique("g"), "enable.auto.commit": "false"})
    codes: set[int] = set()
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        for _ in range(10):
            message = consumer.poll(1.0)
            if message is not None:
                error = message.error()
                assert error is not None, "an unauthorized user read a record"
                codes.add(error.code())
    finally:
        consumer.close()
    assert codes & {KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED}, codes


def test_the_inter_broker_listener_refuses_client_users_with_valid_credentials(local_cluster: LiveCluster) -> None:
    """SCRAM credentials are cluster-wide: only mutual TLS with a node certificate keeps clients off 9093.
    (The Docker runtime renders the same listener and does not publish that port to the host.)"""
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    from kraftform.cluster.topology import CLIENT_PORT, INTERNAL_PORT

    admin = AdminClient(local_cluster.admin)
    user, password = unique("client").replace(".", "-"), "pw-" + unique()
    upsert = UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192),
                                          password.encode())
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(timeout=30)
    conf = local_cluster.client(**{"sasl.username": user, "sasl.password": password})
    client_listeners = conf["bootstrap.servers"]
    deadline = time.monotonic() + 60  # the credential works on the client listener (it reaches every broker)
    while True:
        try:
            AdminClient(conf).list_topics(timeout=5)
            break
        except KafkaException:
            assert time.monotonic() < deadline, "the new user never logged in on the client listener"
    internal = client_listeners.replace(f":{CLIENT_PORT}", f":{INTERNAL_PORT}")
    assert internal != client_listeners
    for protocol in ("SASL_SSL", "SSL"):  # with its password, and as a TLS client without a node certificate
        error = _metadata_error({**conf, "bootstrap.servers": internal, "security.protocol": protocol})
        assert "Failed to get metadata" in error or "SSL handshake failed" in error, (protocol, error)


def test_killed_broker_rejoins_and_under_replication_clears(cluster: LiveCluster) -> None:
    admin = AdminClient(cluster.admin)
    topic = unique("it.failover")
    admin.create_topics([NewTopic(topic, 3, 3, config={"min.insync.replicas": "2"})])[topic].result(timeout=30)
    victim = f"{cluster.spec.name}-broker-1"
    cluster.runtime.kill_node(victim)  # SIGKILL: no controlled shutdown
    try:
        during = poll_health(cluster.connection, lambda h: h.under_replicated > 0 and 2 not in h.brokers, 90)
        assert during.under_replicated > 0 and 2 not in during.brokers
        round_trip(cluster.connection, 3)  # two of three replicas in sync: acks=all writes still succeed
    finally:
        cluster.runtime.start_node(victim)
    after = poll_health(cluster.connection, lambda h: h.ok and h.brokers == (1, 2, 3), 180)
    assert after.brokers == (1, 2, 3) and after.under_replicated == 0 and after.offline == 0


def test_kcat_reaches_the_cluster_with_the_written_config(cluster: LiveCluster) -> None:
    """The librdkafka file works for kcat as written (kcat from the kraftform/kcat image)."""
    import json
    import subprocess
    from pathlib import Path

    from kraftform.runtime.engines.engine import docker_client
    from kraftform.runtime.engines.images import build_kcat

    build_kcat(docker_client(), [])
    kcat = Path(__file__).resolve().parents[3] / "scripts" / "kcat"
    done = subprocess.run([str(kcat), str(cluster.state_dir), "-L", "-J", "-m", "20"], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-1000:]
    assert sorted(b["id"] for b in json.loads(done.stdout)["brokers"]) == [1, 2, 3]


def _listener(cluster: LiveCluster, name: str) -> str:
    """Every node's `name` listener (host:port, comma-separated), as the nodes were started with it."""
    return ",".join(entry.split("://", 1)[1] for r in cluster.deployment.nodes
                    for entry in (r.properties or {}).get("advertised.listeners", "").split(",")
                    if entry.startswith(f"{name}://"))


#: What kraftform issues from the cluster's CA to anything but a node, by the name each holder gets (a registry reader
#: from `registry certificate --name`, the registry's own client and server, a Connect worker's REST key).
NOT_NODES = ("outsider", REGISTRY_CLIENT, "registry 127.0.0.1", "kftest Connect worker 0")


def _acls_seen(admin: AdminClient) -> str:
    """How many ACLs `admin`'s login reads on the cluster, or the refusal."""
    anything: Any = None  # None matches any name, principal and host (the stubs say str)
    everything = AclBindingFilter(ResourceType.ANY, anything, ResourcePatternType.ANY, anything, anything,
                                  AclOperation.ANY, AclPermissionType.ANY)
    try:
        return str(len(admin.describe_acls(everything).result(timeout=30)))
    except KafkaException as exc:
        return str(exc.args[0].name())


def _on_internal(conf: dict[str, Any], topic: str, made: str) -> dict[str, str]:
    """What each action on the INTERNAL listener answered: a topic's metadata, a topic made, the ACLs read (how
    many were seen, or the refusal), a write."""
    admin = AdminClient(conf)
    out = {"sees the topic": str(topic in admin.list_topics(timeout=20).topics)}
    try:
        admin.create_topics([NewTopic(made, 1, 3)])[made].result(timeout=30)
        out["create a topic"] = "done"
    except KafkaException as exc:
        out["create a topic"] = exc.args[0].name()
    out["ACLs seen"] = _acls_seen(admin)
    delivered: list[str] = []
    producer = Producer({**conf, "message.timeout.ms": 20000})
    producer.produce(topic, b"x", on_delivery=lambda err, _msg: delivered.append(err.name() if err else "done"))
    producer.flush(30)
    out["write"] = delivered[0] if delivered else "no answer"
    return out


def _on_controller(tmp_path: Path, pair: KeyPair, ca_pem: str, controllers: str, name: str) -> str:
    """`kafka-metadata-quorum --bootstrap-controller ... describe --status` presenting `pair` (Kafka's own Admin
    client: librdkafka has no way to the controllers): what it answered."""
    (tmp_path / f"{name}.pem").write_text(pair.keystore_pem)
    (tmp_path / "ca.pem").write_text(ca_pem)
    config = tmp_path / f"{name}.properties"
    config.write_text(f"security.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location={tmp_path}/ca.pem\n"
                      f"ssl.keystore.type=PEM\nssl.keystore.location={tmp_path}/{name}.pem\n")
    try:
        run_kafka_tool(METADATA_QUORUM, ["--bootstrap-controller", controllers, "--command-config", str(config),
                                         "describe", "--status"], timeout=120)
        return "done"
    except KafkaRequestFailed as exc:
        return "refused: cluster authorization" if "ClusterAuthorizationException" in str(exc) else str(exc)


def test_no_certificate_of_the_cluster_ca_but_a_nodes_acts_on_the_internal_or_controller_listener(
        local_cluster: LiveCluster, tmp_path: Path) -> None:
    """Every certificate of the cluster's CA once mapped to the node principal, a super user (issue 59): a
    registry reader's certificate made topics on the INTERNAL listener. Now only a node's does: each other kind is
    refused every action there and on the CONTROLLER listener, where the node's own certificate (the control: the
    way in works) does them."""
    secrets = load_secrets(local_cluster.state_dir)
    ca = secrets.ca
    (tmp_path / "ca.pem").write_text(ca.cert_pem)
    topic, made = unique("identity"), unique("identity-made")
    admin = AdminClient(local_cluster.admin)
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(timeout=30)
    probe = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:identity-probe", "*",
                       AclOperation.READ, AclPermissionType.ALLOW)
    admin.create_acls([probe])[probe].result(timeout=30)
    internal, controllers = _listener(local_cluster, "INTERNAL"), _listener(local_cluster, "CONTROLLER")
    assert internal and controllers

    def tls(pair: KeyPair) -> dict[str, Any]:
        return {"bootstrap.servers": internal, "security.protocol": "SSL", "ssl.ca.location": str(tmp_path / "ca.pem"),
                "ssl.certificate.pem": pair.cert_pem, "ssl.key.pem": pair.key_pem}

    try:
        node = next(pair for name, pair in secrets.node_keys.items() if "broker" in name)
        # The probe ACL reaches each broker's metadata in its own time (ci45, loaded, asked one that had not yet):
        # the control reads ACLs once the node's login sees it, the event; a node refused would never see it.
        node_admin = AdminClient(tls(node))
        deadline = time.monotonic() + 60
        while _acls_seen(node_admin) in ("0", "CLUSTER_AUTHORIZATION_FAILED") and time.monotonic() < deadline:
            time.sleep(1)
        control = _on_internal(tls(node), topic, made)
        assert control["sees the topic"] == "True" and control["create a topic"] == "done", control
        assert control["ACLs seen"] not in ("0", "CLUSTER_AUTHORIZATION_FAILED"), control
        assert _on_controller(tmp_path, node, ca.cert_pem, controllers, "node") == "done"
        for name in NOT_NODES:
            pair = issue(ca, name, ["localhost", "127.0.0.1"])
            seen = _on_internal(tls(pair), topic, unique("identity-made"))
            acls = seen.pop("ACLs seen")
            assert acls in ("0", "CLUSTER_AUTHORIZATION_FAILED"), (name, acls)  # Kafka 4 answers an empty list
            assert seen == {"sees the topic": "False", "create a topic": "TOPIC_AUTHORIZATION_FAILED",
                            "write": "TOPIC_AUTHORIZATION_FAILED"}, (name, seen)
            refused = _on_controller(tmp_path, pair, ca.cert_pem, controllers, "other")
            assert refused == "refused: cluster authorization", (name, refused)
    finally:  # the shared cluster as it was: later tests import and plan everything on it
        probes = AclBindingFilter(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:identity-probe", "*",
                                  AclOperation.READ, AclPermissionType.ALLOW)
        admin.delete_acls([probes])[probes].result(timeout=30)
        listed = admin.list_topics(timeout=30).topics
        gone = [t for t in (topic, made) if t in listed]
        for future in admin.delete_topics(gone).values():
            future.result(timeout=30)
