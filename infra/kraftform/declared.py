"""The declared state as every command reads it: the spec directory checked by every layer's rules, and two
revisions diffed with every kind of change.

The model (`specset`) is a leaf and knows nothing of Spark; Spark's consumer checks and consumer diff live with
Spark (`spark.checks`, `spark.diff`). This module composes them, so a new layer with rules of its own adds them
here and every command (`validate`, `plan`, `diff`, the Pulumi program and policy pack) gets them at once.
"""

from __future__ import annotations

from pathlib import Path

from kraftform.plan.changes import Plan
from kraftform.plan.specdiff import diff_specsets
from kraftform.spark.checks import check_consumers
from kraftform.spark.diff import diff_consumers
from kraftform.specset import loader
from kraftform.specset.model import SpecSet

__all__ = ["diff_specs", "load_specs"]


def load_specs(specs_dir: str | Path) -> SpecSet:
    """The validated model of a spec directory, every layer's checks run; raises SpecError or UsageError with
    every problem at once."""
    return loader.load_specs(specs_dir, more=(check_consumers,))


def diff_specs(base: SpecSet, head: SpecSet) -> Plan:
    """Every change between two spec revisions, classified, for review before anything runs."""
    kafka = diff_specsets(base, head)
    return Plan.of([*kafka.changes, *diff_consumers(base, head)], kafka.notes, subject="diff")
