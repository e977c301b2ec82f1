"""The example platform loads; every invalid fixture yields exactly its expected errors."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kraftform.declared import load_specs
from kraftform.errors import SpecError, UsageError

from ...conftest import INVALID_FIXTURES, SpecsCopy, edit

CASES = sorted(p.name for p in INVALID_FIXTURES.iterdir() if p.is_dir())


def test_example_platform_is_valid_and_complete(example_specs: Path) -> None:
    specs = load_specs(example_specs)
    assert specs.cluster.name == "platform"
    assert 10 <= len(specs.topics) <= 30
    compacted = [t.name for t in specs.topics if "compact" in t.config.get("cleanup.policy", "")]
    assert len(compacted) >= 3
    assert {acl.principal for acl in specs.acls} >= {"User:payments-service", "User:orders-service",
                                                     "User:clickstream-collector"}
    assert len(specs.consumers) == 2 and specs.quotas and specs.users
    assert {t.name.split(".")[0] for t in specs.topics} == {"payments", "orders", "clickstream"}


def test_profiles_layer_into_topic_configs(example_specs: Path) -> None:
    specs = load_specs(example_specs)
    tx = specs.topic("payments.transactions.v1")
    assert tx is not None
    # payments-critical extends durability: durability's keys plus its own.
    assert tx.config["min.insync.replicas"] == "2"
    assert tx.config["retention.ms"] == str(30 * 86_400_000)
    assert tx.replication_factor == 3
    # The spec overrides the built-in throughput profile with a topic-side compression.
    views = specs.topic("clickstream.page-views.v1")
    assert views is not None and views.config["compression.type"] == "lz4"
    assert specs.profiles["throughput"].producer["linger.ms"] == "100"


@pytest.mark.parametrize("case", CASES)
def test_invalid_fixture_reports_exactly_the_expected_errors(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = INVALID_FIXTURES / case
    monkeypatch.chdir(directory)
    with pytest.raises(SpecError) as caught:
        load_specs(".")
    expected = (directory / "expected.txt").read_text().splitlines()
    assert [str(p) for p in caught.value.problems] == expected


def test_every_fixture_error_names_its_file() -> None:
    for case in CASES:
        for line in (INVALID_FIXTURES / case / "expected.txt").read_text().splitlines():
            assert (INVALID_FIXTURES / case / line.split(":", 1)[0]).is_file(), line


def test_missing_directory_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a directory"):
        load_specs(tmp_path / "nope")


def test_directory_without_yaml(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match=r"no \.yaml or \.yml spec files"):
        load_specs(tmp_path)


def test_unreadable_and_hidden_files(specs_copy: SpecsCopy, tmp_path: Path) -> None:
    specs = specs_copy()
    hidden = specs / ".git"
    hidden.mkdir()
    (hidden / "junk.yaml").write_text("not: [valid")
    (specs / "binary.yaml").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(SpecError) as caught:
        load_specs(specs)
    messages = [str(p) for p in caught.value.problems]
    assert len(messages) == 1 and messages[0].startswith(f"{specs / 'binary.yaml'}:1:1: $: cannot read")


def test_all_problems_across_files_are_reported_together(specs_copy: SpecsCopy) -> None:
    specs = specs_copy()
    edit(specs / "topics" / "orders.yaml", "partitions: 12", "partitions: -12")
    edit(specs / "quotas.yaml", "request_percentage: 200", "request_percentage: lots")
    edit(specs / "cluster.yaml", "brokers: 3", "brokers: three")
    with pytest.raises(SpecError) as caught:
        load_specs(specs)
    files = {os.path.basename(p.location.file) for p in caught.value.problems}
    assert files == {"orders.yaml", "quotas.yaml", "cluster.yaml"}


def test_integer_and_string_config_values_are_the_same(specs_copy: SpecsCopy) -> None:
    a = specs_copy("a")
    b = specs_copy("b")
    edit(b / "topics" / "orders.yaml", "retention.ms: 3d", 'retention.ms: "259200000"')
    assert load_specs(a).topic("orders.inventory.reservations.v1") == \
        load_specs(b).topic("orders.inventory.reservations.v1")


def test_heaps_and_conventions_are_read_with_units(specs_copy: SpecsCopy) -> None:
    specs = specs_copy()
    edit(specs / "cluster.yaml", "  storage_per_broker: 4TiB\n",
         "  storage_per_broker: 4TiB\n  resources: {broker_heap: 2GiB, controller_heap: 256MiB}\n")
    cluster = load_specs(specs).cluster
    assert (cluster.broker_heap_bytes, cluster.controller_heap_bytes) == (2 * 1024**3, 256 * 1024**2)
    assert (cluster.conventions.min_retention_ms, cluster.conventions.max_retention_ms) == (3_600_000, 7_776_000_000)
    edit(specs / "cluster.yaml", "topic_name: '", "topic_name: '(unclosed")
    with pytest.raises(SpecError, match=r"conventions\.topic_name: not a regular expression"):
        load_specs(specs)


def test_each_stage_reports_with_the_others_whatever_the_order(specs_copy: SpecsCopy) -> None:
    """A schema error (a topic without partitions), a value the model refuses (a misspelt feature), and two
    cross-reference errors (a share group given a consumer group's setting, a reader of an undeclared topic):
    all four in one run, not one stage at a time."""
    specs = specs_copy()
    edit(specs / "cluster.yaml", "  brokers: 3\n", "  brokers: 3\n  features: {group.versoin: 1, share.version: 1}\n")
    edit(specs / "topics/orders.yaml", "partitions:", "partitons:")
    (specs / "groups.yaml").write_text(
        "groups:\n"
        "  - name: alert-workers\n    type: share\n    config: {consumer.session.timeout.ms: 50000}\n"
        "    readers:\n      - principal: User:orders-service\n        topics: [payments.fraud-score.v1]\n")
    with pytest.raises(SpecError) as caught:
        load_specs(specs)
    found = {(Path(p.location.file).name, p.message.split(":")[0]) for p in caught.value.problems}
    assert ("cluster.yaml", "features") in found
    assert any(file == "orders.yaml" for file, _ in found), found
    messages = " | ".join(p.message for p in caught.value.problems)
    assert "'group.versoin' is not a feature of Kafka" in messages
    assert "consumer.session.timeout.ms is a consumer group's setting" in messages
    assert "reads undeclared topic 'payments.fraud-score.v1'" in messages
    # The misspelt feature is left out of the model, not judged again by the checks in other words.
    assert sum("group.versoin" in p.message for p in caught.value.problems) == 1


def test_a_yaml_syntax_error_and_another_files_schema_error_come_together(specs_copy: SpecsCopy) -> None:
    """A file that does not parse stops the cross-references (its declarations are unknown, so every
    reference to them would be reported as missing), but every other file's syntax and schema are still
    judged in the same run."""
    specs = specs_copy()
    edit(specs / "quotas.yaml", "quotas:", "quotas: [")
    edit(specs / "topics/orders.yaml", "partitions:", "partitons:")
    with pytest.raises(SpecError) as caught:
        load_specs(specs)
    files = {Path(p.location.file).name for p in caught.value.problems}
    assert {"quotas.yaml", "orders.yaml"} <= files
