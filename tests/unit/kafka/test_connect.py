"""--command-config files: Kafka's Java format and librdkafka's, and the errors users see."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kraftform.cluster.connection import Connection, parse_connection, read_connection
from kraftform.errors import UsageError


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_java_properties_with_jaas_and_pem_truststore(tmp_path: Path) -> None:
    ca = write(tmp_path / "ca.pem", "x")
    props = write(tmp_path / "admin.properties", f"""# a comment
bootstrap.servers=10.0.0.1:9092,10.0.0.2:9092
security.protocol=SASL_SSL
sasl.mechanism=SCRAM-SHA-512
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="ops" password="s3\\\\"cret";
ssl.truststore.type=PEM
ssl.truststore.location={ca}
""")
    conn = read_connection(props)
    assert (conn.bootstrap, conn.protocol, conn.mechanism, conn.username, conn.ca_path) == (
        "10.0.0.1:9092,10.0.0.2:9092", "SASL_SSL", "SCRAM-SHA-512", "ops", str(ca))
    assert conn.password == 's3"cret'
    assert "s3" not in repr(conn)
    assert conn.librdkafka()["sasl.password"] == 's3"cret' and conn.librdkafka()["ssl.ca.location"] == str(ca)
    assert conn.kafka_python()["bootstrap_servers"] == ["10.0.0.1:9092", "10.0.0.2:9092"]


def test_librdkafka_keys_are_accepted(tmp_path: Path) -> None:
    conn = parse_connection({"bootstrap.servers": "h:1", "security.protocol": "sasl_plaintext",
                             "sasl.mechanisms": "SCRAM-SHA-256", "sasl.username": "u", "sasl.password": "p"},
                            "f")
    assert (conn.protocol, conn.mechanism, conn.username, conn.password) == (
        "SASL_PLAINTEXT", "SCRAM-SHA-256", "u", "p")


@pytest.mark.parametrize(("settings", "message"), [
    ({}, "f: bootstrap.servers is not set"),
    ({"bootstrap.servers": "h:1", "security.protocol": "SASL_TLS"}, "security.protocol=SASL_TLS is not one of"),
    ({"bootstrap.servers": "h:1", "security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"},
     "sasl.mechanism=GSSAPI"),
    ({"bootstrap.servers": "h:1", "security.protocol": "SSL", "ssl.truststore.location": "/x.jks"},
     "ssl.truststore.type must be PEM"),
    ({"bootstrap.servers": "h:1", "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
      "sasl.jaas.config": "PlainLoginModule required;"}, "sasl.jaas.config has no username"),
    ({"bootstrap.servers": "h:1", "security.protocol": "SSL", "ssl.ca.location": "/nonexistent/ca.pem"},
     "CA certificate /nonexistent/ca.pem does not exist"),
])
def test_bad_settings_name_the_file_and_the_key(settings: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=message.replace(".", r"\.").replace("(", r"\(")) as caught:
        parse_connection(settings, "f")
    assert str(caught.value).startswith("f: ")


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such command config file"):
        read_connection(tmp_path / "nope.properties")


def test_kafkas_documented_multi_line_jaas_form_is_read(tmp_path: Path) -> None:
    """The form Kafka's security documentation shows: a continued line, `:` separators, spaces."""
    ca = write(tmp_path / "ca.pem", "x")
    props = write(tmp_path / "client.properties", f"""bootstrap.servers: b1:9092
security.protocol = SASL_SSL
sasl.mechanism=SCRAM-SHA-256
sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\
    username="alice" \\
    password="alice-secret";
ssl.truststore.type=PEM
ssl.truststore.location={ca}
""")
    conn = read_connection(props)
    assert (conn.bootstrap, conn.username, conn.password, conn.mechanism) == (
        "b1:9092", "alice", "alice-secret", "SCRAM-SHA-256")


@settings(max_examples=200, deadline=None)
@given(password=st.text(min_size=1, max_size=40).filter(lambda p: "\x00" not in p))
def test_any_password_survives_the_client_files_kraftform_writes(password: str) -> None:
    """Written as Java properties (JAAS quoted, Properties-escaped) and read back, byte for byte."""
    auth = Connection.scram("h:9092", "admin", password, "SCRAM-SHA-512", __file__)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "admin.properties"
        path.write_text(auth.java_properties(), encoding="utf-8")
        assert read_connection(path).password == password
