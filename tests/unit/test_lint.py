"""Organisation rules: each one fires on the spec that breaks it, at the line that breaks it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kraftform.declared import load_specs
from kraftform.lint import RULES, lint

from ..conftest import SpecsCopy, edit


def rules_hit(specs_dir: Path, env: str = "prod") -> dict[str, list[str]]:
    hits: dict[str, list[str]] = {}
    for finding in lint(load_specs(specs_dir), env):  # type: ignore[arg-type]
        hits.setdefault(finding.rule, []).append(str(finding.problem))
    return hits


def test_the_example_platform_is_clean_in_every_environment(example_specs: Path) -> None:
    assert rules_hit(example_specs, "prod") == {} and rules_hit(example_specs, "dev") == {}


def test_replication_below_three_is_a_production_finding_only(specs_copy: SpecsCopy) -> None:
    specs = specs_copy()
    edit(specs / "topics" / "orders.yaml", "  - name: orders.dlq.v1\n",
         "  - name: orders.dlq.v1\n    replication_factor: 2\n")
    hits = rules_hit(specs)
    assert list(hits) == ["prod-replication"]
    assert "orders.yaml" in hits["prod-replication"][0] and "'orders.dlq.v1'" in hits["prod-replication"][0]
    assert rules_hit(specs, "dev") == {}


def test_wildcard_write_names_and_retention_bounds(specs_copy: SpecsCopy) -> None:
    specs = specs_copy()
    (specs / "extra.yaml").write_text("""acls:
  - principal: "User:*"
    resource: {type: topic, name: orders., pattern: prefixed}
    operations: [read, write]
topics:
  - name: Orders_Legacy
    partitions: 3
    config: {retention.ms: 180d}
  - name: orders.audit.v1
    partitions: 3
    config: {retention.ms: 10m}
""")
    edit(specs / "cluster.yaml", "topic_prefixes: [payments., orders., clickstream.]",
         "topic_prefixes: [payments., orders., clickstream., Orders_]")
    hits = rules_hit(specs, "dev")
    assert sorted(hits) == ["no-wildcard-write", "retention-bounds", "topic-naming"]
    assert "extra.yaml:2:" in hits["no-wildcard-write"][0] and "write" in hits["no-wildcard-write"][0]
    assert hits["topic-naming"] == [h for h in hits["topic-naming"] if "'Orders_Legacy'" in h]
    assert len(hits["retention-bounds"]) == 2
    assert any("exceeds the maximum 90d" in h for h in hits["retention-bounds"])
    assert any("below the minimum 1h" in h for h in hits["retention-bounds"])


def test_a_user_without_a_quota_is_found_unless_a_default_quota_exists(specs_copy: SpecsCopy) -> None:
    specs = specs_copy()
    edit(specs / "quotas.yaml", "  - entity: {user: <default>}", "  - entity: {client_id: <default>}")
    edit(specs / "quotas.yaml", "  - entity: {user: fraud-scoring}", "  - entity: {client_id: fraud-scoring}")
    hits = rules_hit(specs)
    assert list(hits) == ["quota-per-client"] and "'fraud-scoring'" in hits["quota-per-client"][0]
    assert "users.yaml" in hits["quota-per-client"][0]


def test_every_rule_has_an_id_a_description_and_an_environment() -> None:
    assert len({r.id for r in RULES}) == len(RULES)
    assert all(r.description and r.envs for r in RULES)


@pytest.mark.parametrize(("env", "code"), [("prod", 2), ("dev", 0)])
def test_lint_command_exit_codes(specs_copy: SpecsCopy, env: str, code: int) -> None:
    specs = specs_copy()
    edit(specs / "quotas.yaml", "  - entity: {user: <default>}", "  - entity: {client_id: <default>}")
    edit(specs / "quotas.yaml", "  - entity: {user: fraud-scoring}", "  - entity: {client_id: fraud-scoring}")
    done = subprocess.run([sys.executable, "-m", "kraftform", "lint", str(specs), "--env", env],
                          capture_output=True, text=True, check=False)
    assert done.returncode == code, done.stderr
    assert ("[quota-per-client]" in done.stdout) is (env == "prod")
