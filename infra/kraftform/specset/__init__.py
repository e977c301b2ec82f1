"""The declared state: spec files (YAML with positions), their JSON Schema, the typed model, the built-in
profiles and the model's own cross-reference checks. A leaf: it imports only the base modules (errors, units,
versions, topic_configs), so everything above can read a `SpecSet` without pulling in Spark or Kafka.

Commands load specs through `kraftform.declared.load_specs`, which adds the checks of the layers above (the
consumers' pipelines, `spark.checks`) to the model's own.
"""
