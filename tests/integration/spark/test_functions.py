"""kraftform's copy of Spark's function names (what `validate` checks queries against) is what the pinned Spark
itself lists: asked of a real session, so a Spark upgrade cannot leave validation behind."""

from __future__ import annotations

from typing import Any

import pytest

from kraftform.spark.functions import LISTED_FOR, SPARK_FUNCTIONS, session_functions
from kraftform.versions import SPARK_VERSION

pytestmark = pytest.mark.integration


def test_the_function_list_is_the_pinned_sparks_own(spark: Any) -> None:
    assert spark.version == SPARK_VERSION == LISTED_FOR
    live = session_functions(spark)
    missing, extra = sorted(live - SPARK_FUNCTIONS), sorted(SPARK_FUNCTIONS - live)
    assert not missing and not extra, (
        f"spark/functions.py is out of date (regenerate with `python -m kraftform.spark.functions`): "
        f"missing {missing[:20]}, not in Spark {extra[:20]}")
    assert {"round", "to_json", "named_struct", "session_window", "window"} <= live and "roundx" not in live
