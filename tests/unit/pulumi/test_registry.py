"""The subjects' provider in a preview where the registry is made or changed in the same run: its login is not
known yet (the engine computes it later), so nothing is planned against it and the plan is left for the run to
compute; the diff reports a change rather than "no changes". Found by `pulumi preview` on a stack whose registry
container had been stopped by hand (the whole login arrived as `Unknown`)."""

from __future__ import annotations

from typing import Any

import pytest
from pulumi.output import Unknown
from pulumi.runtime.rpc import UNKNOWN

from kraftform.pulumi.registry import SubjectsProvider

INPUTS: dict[str, Any] = {"subjects": {}, "consumers": [], "topics": ["t"], "protect": False}
KNOWN = {"url": "https://127.0.0.1:18081/apis/ccompat/v6", "ca": "CA", "cert": "C", "key": "K"}


@pytest.mark.parametrize("login", [Unknown(), UNKNOWN, {**KNOWN, "cert": Unknown()}],  # type: ignore[no-untyped-call]
                         ids=["the-whole-login", "its-wire-string", "one-field"])
def test_a_login_not_known_yet_plans_nothing_and_is_a_change(login: Any) -> None:
    provider = SubjectsProvider()
    checked = provider.check({}, {**INPUTS, "registry": login})
    assert checked.failures == [] and checked.inputs["plan"] == UNKNOWN
    diff = provider.diff("subjects", {**INPUTS, "registry": KNOWN, "plan": {}}, checked.inputs)
    assert diff.changes is True


def test_the_same_inputs_and_an_empty_plan_are_no_change() -> None:
    olds = {**INPUTS, "registry": KNOWN, "plan": {}}
    assert SubjectsProvider().diff("subjects", olds, dict(olds)).changes is False
