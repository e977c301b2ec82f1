"""`kraftform import` output: valid specs whose plan against the cluster they came from is empty."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from kraftform.declared import load_specs
from kraftform.plan import UserState
from kraftform.plan.export import password_env, render_specs
from kraftform.plan.live import live_plan
from kraftform.specset.model import AclBinding, QuotaEntity

from ...conftest import EXAMPLE_SPECS
from ..plan.test_live import applied


def test_imported_specs_are_valid_and_plan_to_nothing(tmp_path: Path) -> None:
    observed = applied(load_specs(EXAMPLE_SPECS))
    observed = dataclasses.replace(
        observed,
        users={**observed.users, "kraftform-admin": UserState("kraftform-admin", "SCRAM-SHA-512", 4096),
               "kraftform-broker": UserState("kraftform-broker", "SCRAM-SHA-512", 4096)},
        acls=observed.acls | {AclBinding("User:*", "topic", "public.", "prefixed", "read", "allow"),
                              AclBinding("User:CN=app", "group", "app", "literal", "read", "deny", "10.0.0.1")},
        quotas={**observed.quotas, QuotaEntity(client_id="<default>"): {"request_percentage": 50.5}})
    files = render_specs(observed, "prod-east")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    imported = load_specs(tmp_path)
    assert imported.cluster.name == "prod-east" and imported.cluster.brokers == 3
    assert imported.cluster.racks == ("rack-a", "rack-b", "rack-c")
    assert {u.name for u in imported.users} == {"payments-service", "orders-service", "clickstream-collector",
                                                "fraud-scoring", "clickstream-sessionizer"}
    assert {p.name for p in imported.principals} == {"User:CN=app", "User:CN=legacy-billing,OU=apps,O=example"}
    plan = live_plan(imported, observed)
    assert plan.changes == ()


def test_password_variables_are_shell_safe() -> None:
    assert password_env("orders-service") == "KRAFTFORM_PASSWORD_ORDERS_SERVICE"
    assert password_env("a.b@c") == "KRAFTFORM_PASSWORD_A_B_C"


def test_feature_levels_and_the_acl_named_groups_settings_are_imported_and_plan_to_nothing(tmp_path: Path) -> None:
    observed = dataclasses.replace(
        applied(load_specs(EXAMPLE_SPECS)),
        features={"metadata.version": 29, "group.version": 1, "share.version": 1, "some.future.version": 2},
        supported_features={"metadata.version": 30, "group.version": 1, "share.version": 1},
        group_configs={"legacy-billing": {"consumer.session.timeout.ms": "50000"}, "orders-service-0": {}})
    files = render_specs(observed, "prod-east")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    imported = load_specs(tmp_path)
    # 29 is Kafka 4.2's metadata.version; a feature the pinned Kafka does not know is left unmanaged.
    assert imported.cluster.metadata_version == "4.2"
    assert dict(imported.cluster.features) == {"group.version": 1, "share.version": 1}
    assert [(g.name, dict(g.config)) for g in imported.groups] == [
        ("legacy-billing", {"consumer.session.timeout.ms": "50000"})]
    assert live_plan(imported, observed).changes == ()
    between = render_specs(dataclasses.replace(observed, features={"metadata.version": 26}), "prod-east")
    assert "metadata_version" not in between["cluster.yaml"]  # between releases: not managed
