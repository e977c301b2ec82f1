"""The declared state as every command reads it: the spec directory checked by every layer's rules, and two
revisions diffed with every kind of change.

The model (`specset`) is a leaf and knows nothing of Spark; Spark's consumer checks and consumer diff live with
Spark (`spark.checks`, `spark.diff`). This module composes them, so a new layer with rules of its own adds them
here and every command (`validate`, `plan`, `diff`, the Pulumi program and policy pack) gets them at once.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from kraftform.specset import cache
from kraftform.specset.files import input_files
from kraftform.specset.model import SpecSet

if TYPE_CHECKING:
    from kraftform.plan.changes import Plan
    from kraftform.plan.subjects import Gate

__all__ = ["consumer_gate", "diff_specs", "load_specs"]


def load_specs(specs_dir: str | Path) -> SpecSet:
    """The validated model of a spec directory, every layer's checks run; raises SpecError or UsageError with
    every problem at once. Unchanged specs validated before by this code come from the cache (`specset.cache`);
    the validating layers (YAML, JSON Schema, Spark SQL) are imported only when specs are validated."""
    root = Path(specs_dir)

    def validated() -> SpecSet:
        from kraftform.spark.checks import check_consumers
        from kraftform.specset import loader

        return loader.load_specs(root, more=(check_consumers,))

    return cache.cached(root, input_files(root), validated) if root.is_dir() else validated()


def diff_specs(base: SpecSet, head: SpecSet) -> Plan:
    """Every change between two spec revisions, classified, for review before anything runs."""
    from kraftform.plan.changes import Plan
    from kraftform.plan.specdiff import diff_specsets
    from kraftform.spark.diff import diff_consumers

    kafka = diff_specsets(base, head)
    return Plan.of([*kafka.changes, *diff_consumers(base, head)], kafka.notes, subject="diff")


def consumer_gate(specs: SpecSet) -> Gate:
    """The consumer gate bound to the specs' consumers, for a plan of the registry's subjects."""
    from kraftform.spark.schema_gate import readers_broken

    return lambda subject, old, label: readers_broken(subject, old, label, specs.consumers)
