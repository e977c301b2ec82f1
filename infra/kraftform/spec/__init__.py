"""Spec files: YAML with positions, JSON Schema validation, the typed model and cross-reference checks."""

from kraftform.spec.loader import load_specs
from kraftform.spec.model import SpecSet

__all__ = ["SpecSet", "load_specs"]
