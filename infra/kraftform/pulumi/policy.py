"""The policy pack's validations: `kraftform.lint` rules applied to the specs a stack deploys.

The stack program registers one `kraftform:index:Specs` component whose inputs name the spec directory
and the environment; each policy loads those specs and runs one lint rule, so `pulumi preview
--policy-pack policies` and `kraftform lint --env ...` report the same findings with the same words.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kraftform.declared import load_specs
from kraftform.errors import KraftformError
from kraftform.lint import ENVS, RULES, Rule, lint

SPECS_TYPE = "kraftform:index:Specs"

Report = Callable[[str, str | None], None]


def validator(rule: Rule) -> Callable[[Any, Report], None]:
    """A ResourceValidation callback running `rule` on the stack's specs."""

    def validate(args: Any, report: Report) -> None:
        if args.resource_type != SPECS_TYPE:
            return
        env = args.props.get("env")
        if env not in ENVS:
            report(f"stack config kraftform:env must be one of {', '.join(ENVS)}, got {env!r}", args.urn)
            return
        try:
            specs = load_specs(args.props["specsDir"])
        except KraftformError as exc:
            report(f"specs cannot be loaded: {exc}", args.urn)
            return
        for finding in lint(specs, env):
            if finding.rule == rule.id:
                report(str(finding.problem), args.urn)

    return validate


def policies() -> list[Any]:
    """One mandatory ResourceValidationPolicy per lint rule."""
    from pulumi_policy import EnforcementLevel, ResourceValidationPolicy

    return [ResourceValidationPolicy(name=rule.id, description=rule.description, validate=validator(rule),
                                     enforcement_level=EnforcementLevel.MANDATORY) for rule in RULES]
