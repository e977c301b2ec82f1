"""pyspark and Spark's Kafka connector at one version: pinned in pyproject.toml and versions.py alike."""

from __future__ import annotations

import re
from importlib.metadata import version

from kraftform.versions import SPARK_VERSION

from ...conftest import REPO


def test_pyspark_is_pinned_at_the_connectors_version() -> None:
    pins = re.findall(r'"pyspark==([^"]+)"', (REPO / "pyproject.toml").read_text())
    assert pins == [SPARK_VERSION]
    assert version("pyspark") == SPARK_VERSION
