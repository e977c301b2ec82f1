"""The change-data-capture example (examples/cdc) as the specs read it: what it declares, the secrets it needs
named by `kraftform passwords`, and `status` counting only real consumer groups (tests/integration/connect/
test_cdc_example.py runs it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kraftform.cli import main
from kraftform.declared import load_specs
from kraftform.kafka.status import declared_groups

from ..conftest import REPO

CDC = REPO / "examples" / "cdc"


def test_the_example_declares_a_capture_a_sink_and_a_spark_consumer_of_the_same_topic() -> None:
    specs = load_specs(CDC)
    (connect,) = specs.connect
    assert {c.name: (c.type, c.topics) for c in connect.connectors} == {
        "orders-capture": ("source", ("orders.public.orders",)),
        "orders-archive": ("sink", ("orders.public.orders",))}
    assert [c.topics for c in specs.consumers] == [("orders.public.orders",)]


def test_the_workers_group_is_not_a_consumer_group_status_reads_offsets_of() -> None:
    groups = declared_groups(load_specs(CDC))
    assert "cdc-connect" not in groups  # the workers' group: Connect's protocol, no offsets
    assert "connect-orders-archive" in groups  # the sink's consumer group: its lag is the sink's


def test_passwords_names_the_database_password_a_connector_reads_and_the_example_env_makes_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for var in ("KRAFTFORM_POSTGRES_PASSWORD", "KRAFTFORM_PASSWORD_CDC_CONNECT", "KRAFTFORM_PASSWORD_ORDER_CHANGES"):
        monkeypatch.delenv(var, raising=False)
    assert main(["passwords", str(CDC)]) == 1
    out, err = capsys.readouterr()
    assert "connector orders-capture database.password: environment variable KRAFTFORM_POSTGRES_PASSWORD: " \
           "MISSING" in out
    assert "KRAFTFORM_POSTGRES_PASSWORD (connector orders-capture)" in err
    target = tmp_path / "env"
    assert main(["passwords", str(CDC), "--example-env", str(target)]) == 0
    names = [line.split("=")[0].removeprefix("export ") for line in target.read_text().splitlines()]
    assert names == ["KRAFTFORM_PASSWORD_CDC_CONNECT", "KRAFTFORM_PASSWORD_ORDER_CHANGES",
                     "KRAFTFORM_POSTGRES_PASSWORD"]
