"""The policy pack and `kraftform lint` report the same violations, because they run the same rules."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from kraftform.declared import load_specs
from kraftform.lint import RULES, Env, lint
from kraftform.pulumi.policy import SPECS_TYPE, policies, validator

from ...conftest import SpecsCopy, edit

URN = "urn:pulumi:prod::kraftform::kraftform:index:Specs::platform"


def violations(specs_dir: Path, env: str, resource_type: str = SPECS_TYPE) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    args = SimpleNamespace(resource_type=resource_type, props={"specsDir": str(specs_dir), "env": env}, urn=URN)
    for rule in RULES:

        def report(message: str, _urn: str | None, rule_id: str = rule.id) -> None:
            found.append((rule_id, message))

        validator(rule)(args, report)
    return sorted(found)


def test_pack_and_lint_agree_on_broken_specs(specs_copy: SpecsCopy) -> None:
    specs = specs_copy()
    edit(specs / "quotas.yaml", "  - entity: {user: <default>}", "  - entity: {client_id: <default>}")
    edit(specs / "quotas.yaml", "  - entity: {user: fraud-scoring}", "  - entity: {client_id: fraud-scoring}")
    edit(specs / "topics" / "orders.yaml", "  - name: orders.dlq.v1\n",
         "  - name: orders.dlq.v1\n    replication_factor: 2\n")
    envs: tuple[Env, ...] = ("prod", "dev")
    for env in envs:
        from_lint = sorted((f.rule, str(f.problem)) for f in lint(load_specs(specs), env))
        assert violations(specs, env) == from_lint
    assert {rule for rule, _ in violations(specs, "prod")} == {"prod-replication", "quota-per-client"}
    assert violations(specs, "dev") == []


def test_other_resources_and_bad_settings(example_specs: Path, tmp_path: Path) -> None:
    assert violations(example_specs, "prod", resource_type="docker:index/container:Container") == []
    assert violations(example_specs, "prod") == []
    assert {m for _, m in violations(example_specs, "staging")} == {
        "stack config kraftform:env must be one of prod, dev, got 'staging'"}
    missing = violations(tmp_path / "nowhere", "dev")
    assert missing and all("specs cannot be loaded" in m for _, m in missing)


def test_one_mandatory_policy_per_rule() -> None:
    pack = policies()
    assert [p.name for p in pack] == [r.id for r in RULES]
    assert {str(p.enforcement_level) for p in pack} == {"EnforcementLevel.MANDATORY"}
