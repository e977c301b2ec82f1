"""Policy pack entry point: thin wiring, the rules are `kraftform.lint.RULES`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "infra"))  # kraftform, when not pip-installed

from pulumi_policy import PolicyPack

from kraftform.pulumi.policy import policies

PolicyPack(name="kraftform", policies=policies())
