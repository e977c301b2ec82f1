"""Pinned versions of the non-Python parts kraftform runs. Python packages are pinned in pyproject.toml.

Kafka comes from Maven Central (`org.apache.kafka:kafka_2.13`), never from a registry of images.
"""

from __future__ import annotations

#: The Apache Kafka release kraftform provisions and tests against (latest stable 4.x on Maven Central).
KAFKA_VERSION = "4.4.0"

#: Kafka 4 releases a spec may ask for; the broker protocol used by the reconciler is stable across them.
SUPPORTED_KAFKA_VERSIONS = ("4.0", "4.1", "4.2", "4.3", "4.4")
