"""Spec files: YAML with positions, JSON Schema validation, the typed model and cross-reference checks.

Nothing is imported here: `spec.model` is a leaf that checks elsewhere (the Spark query analysis) import,
and loading it must not pull in the loader, which imports those checks. Use `kraftform.spec.loader.load_specs`
and `kraftform.spec.model`.
"""
