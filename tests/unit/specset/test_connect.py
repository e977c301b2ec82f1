"""Connect clusters in the specs: their internal topics and their workers' grants derived, every reference
checked where it is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftform.declared import load_specs
from kraftform.errors import SpecError
from kraftform.lint import lint
from kraftform.specset.model import EnvSecret

from ...conftest import SpecsCopy

CONNECT = """\
users:
  - name: orders-connect
    password: {env: KRAFTFORM_PASSWORD_ORDERS_CONNECT}
connect:
  - name: orders-connect
    user: orders-connect
    workers: 2
    internal_topics: {offsets_partitions: 10}
    connectors:
      - name: orders-archive
        class: org.apache.kafka.connect.file.FileStreamSinkConnector
        type: sink
        topics: [orders.created.v1]
        config: {file: /var/archive/orders.txt}
      - name: orders-import
        class: org.apache.kafka.connect.file.FileStreamSourceConnector
        type: source
        topics: [orders.status.v1]
        state: paused
        config: {file: /var/import/status.txt, topic: orders.status.v1, api.password: {env: IMPORT_PASSWORD}}
"""


def with_connect(specs: Path, text: str = CONNECT) -> Path:
    (specs / "connect.yaml").write_text(text)
    return specs


def test_internal_topics_are_compacted_and_sized_as_connect_needs(specs_copy: SpecsCopy) -> None:
    loaded = load_specs(with_connect(specs_copy()))
    internal = {t.name: t for t in loaded.topics if t.derived_from}
    assert {n: (t.partitions, t.replication_factor, dict(t.config)) for n, t in internal.items()} == {
        "orders-connect.configs": (1, 3, {"cleanup.policy": "compact"}),
        "orders-connect.offsets": (10, 3, {"cleanup.policy": "compact"}),
        "orders-connect.status": (5, 3, {"cleanup.policy": "compact"}),
    }
    # Outside managed_scope's prefixes and the naming convention: derived names are judged by neither.
    assert not [f for f in lint(loaded, "prod") if "orders-connect." in str(f)]


def test_the_workers_user_is_granted_its_group_internal_topics_and_each_connectors_topics(
        specs_copy: SpecsCopy) -> None:
    loaded = load_specs(with_connect(specs_copy()))
    grants = {(b.resource_type, b.resource_name, b.operation) for b in loaded.acl_bindings()
              if b.principal == "User:orders-connect"}
    internal = {("topic", f"orders-connect.{t}", op) for t in ("configs", "offsets", "status")
                for op in ("read", "write", "describe", "describe_configs")}
    assert grants == internal | {
        ("group", "orders-connect", "read"),
        # A sink's consumer group: delete is what a reset of its offsets sends.
        ("group", "connect-orders-archive", "read"), ("group", "connect-orders-archive", "delete"),
        ("topic", "orders.created.v1", "read"), ("topic", "orders.created.v1", "describe"),
        ("topic", "orders.status.v1", "write"), ("topic", "orders.status.v1", "describe"),
    }


def test_a_connectors_rest_config_carries_its_fields_and_secret_references_only(specs_copy: SpecsCopy) -> None:
    loaded = load_specs(with_connect(specs_copy()))
    sink, source = loaded.connect[0].connectors
    assert sink.rest_config() == {"name": "orders-archive", "tasks.max": "1", "topics": "orders.created.v1",
                                  "connector.class": "org.apache.kafka.connect.file.FileStreamSinkConnector",
                                  "file": "/var/archive/orders.txt"}
    assert source.config["api.password"] == EnvSecret("IMPORT_PASSWORD")
    assert source.rest_config()["api.password"] == "${env:IMPORT_PASSWORD}"
    assert "topics" not in source.rest_config() and source.state == "paused"


@pytest.mark.parametrize(("old", "new", "message"), [
    ("    user: orders-connect\n", "    user: nobody\n",
     "Connect cluster 'orders-connect': user 'nobody' is not a declared SCRAM user (its workers log in as it); "
     "declare it under `users`"),
    ("topics: [orders.created.v1]", "topics: [orders.created.v2]",
     "connector 'orders-archive': topic 'orders.created.v2' is not declared (its ACLs are derived from the "
     "declared topics it reads)"),
    ("api.password: {env: IMPORT_PASSWORD}", "api.password: hunter2",
     "connector 'orders-import': 'api.password' looks like a secret; give it as {env: NAME} (the workers read "
     "it from their environment), never in the specs"),
    ("config: {file: /var/archive/orders.txt}", "config: {file: /x, tasks.max: 4}",
     "connector 'orders-archive': set 'tasks.max' through the connector's `tasks_max`, not its config"),
    ("    workers: 2\n", "    workers: 2\n    config: {sasl.mechanism: PLAIN}\n",
     "Connect cluster 'orders-connect': worker setting 'sasl.mechanism' is kraftform's (security, identity, "
     "internal topics, REST and plugins follow from the specs)"),
    ("      - name: orders-import\n", "      - name: orders-archive\n",
     "duplicate connector 'orders-archive' (first declared at "),
    ("        type: sink\n", "        type: sink\n        user: nobody\n",
     "connector 'orders-archive': user 'nobody' is not a declared SCRAM user (its clients log in as it); declare "
     "it under `users`"),
    ("config: {file: /var/archive/orders.txt}",
     "config: {file: /x, consumer.override.sasl.jaas.config: {env: JAAS}}",
     "connector 'orders-archive': 'consumer.override.sasl.jaas.config' is kraftform's: a connector's clients log in "
     "as the workers' user, or as the connector's own `user`"),
    ("config: {file: /var/archive/orders.txt}", "config: {file: /x, producer.override.security.protocol: PLAINTEXT}",
     "connector 'orders-archive': 'producer.override.security.protocol' is kraftform's"),
    # Written by hand, a reference would read any of the workers' variables or another connector's login.
    ("config: {file: /var/archive/orders.txt}", "config: {file: '${env:AWS_SECRET_ACCESS_KEY}'}",
     "connector 'orders-archive': 'file' holds a config provider reference"),
    ("config: {file: /var/archive/orders.txt}", "config: {file: 'x${dir:/c/logins:orders-cdc}'}",
     "connector 'orders-archive': 'file' holds a config provider reference"),
])
def test_a_wrong_reference_is_refused_at_its_line(specs_copy: SpecsCopy, old: str, new: str,
                                                  message: str) -> None:
    specs = with_connect(specs_copy(), CONNECT.replace(old, new))
    with pytest.raises(SpecError) as caught:
        load_specs(specs)
    found = [p for p in caught.value.problems if p.message.startswith(message)]
    assert found, [p.message for p in caught.value.problems]
    assert found[0].location.file.endswith("connect.yaml") and found[0].location.line is not None


def test_a_connector_without_a_type_is_a_schema_error_at_its_place(specs_copy: SpecsCopy) -> None:
    specs = with_connect(specs_copy(), CONNECT.replace("        type: sink\n", ""))
    with pytest.raises(SpecError) as caught:
        load_specs(specs)
    assert any("type" in p.message and "connectors[0]" in str(p.location) for p in caught.value.problems), \
        [str(p) for p in caught.value.problems]


def test_the_offline_diff_classes_connect_changes(specs_copy: SpecsCopy) -> None:
    from kraftform.declared import diff_specs

    base = load_specs(with_connect(specs_copy("base")))
    head_text = (CONNECT.replace("    workers: 2\n", "    workers: 3\n")
                 .replace("topics: [orders.created.v1]", "topics: [orders.status.v1]")
                 .replace("state: paused", "state: running"))
    head = load_specs(with_connect(specs_copy("head"), head_text))
    plan = diff_specs(base, head)
    connect = {(c.resource, c.key): (c.safety.value, c.current, c.desired) for c in plan.changes
               if c.kind.value == "connector"}
    assert connect == {
        ("orders-connect", "workers"): ("disruptive", "2", "3"),
        ("orders-connect/orders-archive", "topics"): ("destructive", "orders.created.v1", "orders.status.v1"),
        ("orders-connect/orders-import", "state"): ("safe", "paused", "running"),
    }


def test_size_counts_the_workers_and_their_tasks(specs_copy: SpecsCopy) -> None:
    from kraftform.cli.spec_commands import render_sizing
    from kraftform.sizing import size_cluster

    report = size_cluster(load_specs(with_connect(specs_copy(), CONNECT.replace("    workers: 2\n",
                                                                                 "    workers: 3\n"))))
    [sized] = report.connect
    assert (sized.workers, sized.tasks, sized.memory_bytes) == (3, 1, 3 * 256 * 1024 * 1024)  # paused: no tasks
    assert ("Connect cluster 'orders-connect' has 3 workers for 1 running task(s): 2 stay idle (they take over "
            "when a worker fails)") in report.warnings
    assert "Connect workers beside the brokers: 3 JVM(s), 768 MiB of heap in all" in render_sizing(report)


OWN_USER = CONNECT.replace("""    password: {env: KRAFTFORM_PASSWORD_ORDERS_CONNECT}
""", """    password: {env: KRAFTFORM_PASSWORD_ORDERS_CONNECT}
  - name: orders-archiver
    password: {file: /run/secrets/orders-archiver}
    mechanism: SCRAM-SHA-256
""").replace("""        type: sink
""", """        type: sink
        user: orders-archiver
""")


def test_a_connector_with_its_own_user_gets_the_grants_and_logs_in_as_it(specs_copy: SpecsCopy) -> None:
    loaded = load_specs(with_connect(specs_copy(), OWN_USER))
    grants = {(b.principal, b.resource_type, b.resource_name, b.operation) for b in loaded.acl_bindings()
              if "orders-archive" in b.resource_name or b.resource_name == "orders.created.v1"}
    # The sink's topic and group go to its own user; the workers' user is granted none of them.
    assert grants == {("User:orders-archiver", "group", "connect-orders-archive", "read"),
                      ("User:orders-archiver", "group", "connect-orders-archive", "delete"),
                      ("User:orders-archiver", "topic", "orders.created.v1", "read"),
                      ("User:orders-archiver", "topic", "orders.created.v1", "describe")}
    [connect] = loaded.connect
    sink = next(c for c in connect.connectors if c.name == "orders-archive")
    assert connect.connector_users == ("orders-archiver",)
    config = sink.rest_config("/state/connect/orders-connect/logins")
    jaas = ('org.apache.kafka.common.security.scram.ScramLoginModule required username="orders-archiver" '
            'password="${dir:/state/connect/orders-connect/logins:orders-archiver}";')
    for client in ("producer", "consumer", "admin"):
        assert config[f"{client}.override.sasl.jaas.config"] == jaas
        assert config[f"{client}.override.sasl.mechanism"] == "SCRAM-SHA-256"
    # A connector without a user keeps the workers' login: no override at all.
    source = next(c for c in connect.connectors if c.name == "orders-import")
    assert not [k for k in source.rest_config("/x") if ".override." in k]


def test_workers_allow_a_login_override_and_read_logins_from_their_directory_only() -> None:
    from kraftform.cluster.connect import WorkerFiles, worker_properties
    from kraftform.specset.model import ConnectSpec

    files = WorkerFiles("/w", "/w/rest.p12", "/w/trust.p12", "/w/jaas.conf", "/w/users", "/c/logins")
    props = worker_properties(ConnectSpec("c", "c"), 0, "127.0.0.1", {"bootstrap.servers": "b:9093"}, files, "pw", ())
    assert props["connector.client.config.override.policy"] == "Principal"
    assert props["config.providers"] == "env,dir"
    assert props["config.providers.dir.class"] == "org.apache.kafka.common.config.provider.DirectoryConfigProvider"
    assert props["config.providers.dir.param.allowed.paths"] == "/c/logins"
    assert props["config.providers.env.param.allowlist.pattern"] == "^$"  # none declared: no variable resolves


def test_a_worker_reads_only_the_variables_its_connectors_declare() -> None:
    from kraftform.cluster.connect import env_allowlist, worker_environment
    from kraftform.specset.model import ConnectorSpec, ConnectSpec, EnvSecret

    spec = ConnectSpec("c", "c", connectors=(
        ConnectorSpec("pg", "PostgresConnector", "source", ("t",), config={"database.password": EnvSecret("PG_PW")}),))
    env = {"PATH": "/usr/bin", "HOME": "/root", "PG_PW": "s3cret", "AWS_SECRET_ACCESS_KEY": "x",
           "KRAFTFORM_PASSWORD_BILLING": "y"}
    assert worker_environment(spec, env) == {"PATH": "/usr/bin", "HOME": "/root", "PG_PW": "s3cret"}
    assert env_allowlist(spec) == "^(PG_PW)$"


def test_two_sinks_of_one_name_in_two_connect_clusters_are_refused(specs_copy: SpecsCopy) -> None:
    """Both would be consumer group `connect-<name>` on the one Kafka cluster, each reading half the partitions."""
    second = """
  - name: other-connect
    user: orders-connect
    rest_port: 18183
    connectors:
      - name: orders-archive
        class: org.apache.kafka.connect.file.FileStreamSinkConnector
        type: sink
        topics: [orders.created.v1]
        config: {file: /var/archive/other.txt}
"""
    with pytest.raises(SpecError) as caught:
        load_specs(with_connect(specs_copy(), CONNECT + second))
    [problem] = [p for p in caught.value.problems if "also a sink" in p.message]
    assert problem.message.startswith("sink connector 'orders-archive' is also a sink of Connect cluster "
                                      "'orders-connect': both would read as consumer group 'connect-orders-archive'")
    assert (problem.location.line, problem.location.path) == (26, "$.connect[1].connectors[0]")
