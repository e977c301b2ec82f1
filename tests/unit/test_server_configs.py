"""Broker settings judged by the pinned Kafka's own definitions (generated from its jars)."""

from __future__ import annotations

import pytest

from kraftform.definitions.server_configs import check_setting, definition, parse_config_docs, render_table
from kraftform.definitions.server_table import KAFKA_CONFIGS, KAFKA_VERSION
from kraftform.versions import KAFKA_VERSION as PINNED


def test_the_table_is_the_pinned_kafkas() -> None:
    assert KAFKA_VERSION == PINNED and len(KAFKA_CONFIGS) > 300
    threads = definition("num.io.threads")
    assert threads is not None and (threads.type, threads.mode, threads.dynamic) == ("int", "cluster-wide", True)
    fetch = definition("replica.fetch.max.bytes")
    assert fetch is not None and fetch.mode in ("read-only", "cluster-wide", "per-broker")
    assert definition("node.id") is not None and not definition("node.id").dynamic  # type: ignore[union-attr]


@pytest.mark.parametrize(("key", "value", "says"), [
    ("num.io.threads", "16", None),
    ("log.retention.ms", "86400000", None),
    ("compression.type", "zstd", None),
    ("num.io.thread", "16", "num.io.thread is not a setting of Kafka's brokers; did you mean num.io.threads?"),
    ("num.io.threads", "sixteen", "num.io.threads takes an int, got 'sixteen'"),
    ("num.io.threads", "0", "num.io.threads takes [1,...], got 0"),
    ("compression.type", "brotli", "compression.type takes one of uncompressed, zstd, lz4, snappy, gzip, producer"),
    ("auto.create.topics.enable", "yes", "auto.create.topics.enable takes true or false, got 'yes'"),
    ("min.insync.replicas", "2", "min.insync.replicas is set by kraftform from `defaults.min_insync_replicas`"),
    ("listeners", "PLAINTEXT://:9092", "listeners is set by kraftform from `security`"),
    ("ssl.keystore.location", "/x", "ssl.keystore.location is set by kraftform from `security`"),
    ("delegation.token.secret.key", "s3cret", "delegation.token.secret.key is a secret, and specs hold no secrets"),
])
def test_a_setting_is_checked_by_name_type_range_and_owner(key: str, value: str, says: str | None) -> None:
    found = check_setting(key, value)
    if says is None:
        assert found is None
    else:
        assert found is not None and found.startswith(says), found


def test_the_docs_parser_reads_kafkas_html_and_the_table_renders_back() -> None:
    docs = ('<li>\n<h4><a id="num.io.threads"></a><a id="brokerconfigs_num.io.threads" href="#x">num.io.threads</a>'
            '</h4>\n<p>Threads.</p>\n<table><tbody>\n<tr><th>Type:</th><td>int</td></tr>\n<tr><th>Default:</th>'
            '<td>8</td></tr>\n<tr><th>Valid Values:</th><td>[1,...]</td></tr>\n<tr><th>Importance:</th>'
            '<td>high</td></tr>\n<tr><th>Update Mode:</th><td>cluster-wide</td></tr>\n</tbody></table>\n</li>')
    table = parse_config_docs(docs)
    assert table == {"num.io.threads": ("int", "8", "[1,...]", "cluster-wide")}
    namespace: dict[str, object] = {}
    exec(render_table(table, "9.9.9"), namespace)  # the generated module's own text
    assert namespace["KAFKA_CONFIGS"] == table and namespace["KAFKA_VERSION"] == "9.9.9"
