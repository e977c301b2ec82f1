"""`kraftform validate` catches a broken pipeline in the pull request: file:line and JSON path, exit 1, and
no JVM (sqlglot parses the Spark SQL; pyspark is never imported)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ...conftest import SpecsCopy, edit

CHECK = ("import sys; from kraftform.cli import main; code = main(['validate', sys.argv[1]]); "
         "print('pyspark loaded' if 'pyspark' in sys.modules else 'no pyspark'); sys.exit(code)")


def validate_without_java(specs: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME")}
    env["PATH"] = os.path.dirname(sys.executable)  # no java on it
    return subprocess.run([sys.executable, "-c", CHECK, str(specs)], capture_output=True, text=True, env=env,
                          check=False, timeout=120)


@pytest.mark.parametrize(("file", "old", "new", "expected"), [
    ("consumers.yaml", "WHERE payment_id IS NOT NULL", "WHERE payment_idd IS NOT NULL",
     r"consumers\.yaml:\d+:\d+: \$\.consumers\[0\]\.query: consumer 'fraud-scoring': SQL line 12, column 7: "
     r"Column 'payment_idd' could "
     r"not be resolved \(the input columns are: payment_id, account_id"),
    ("consumers.yaml", "FROM input\n      WHERE", "FROM input\n      WHERE WHERE",
     r"consumers\.yaml:\d+:\d+: \$\.consumers\[0\]\.query: consumer 'fraud-scoring': SQL line \d+, column \d+: "
     r"syntax error"),
    ("consumers.yaml", "GROUP BY user_id, session_window(event_time, '30 minutes')", "GROUP BY user_id",
     r"\$\.consumers\[1\]\.query: consumer 'clickstream-sessionizer': SQL line \d+, column \d+: Column 'start' could "
     r"not be resolved"),
    ("acls.yaml", "    resource: {type: topic, name: payments.fraud-scores.v1}\n    operations: [write, describe]",
     "    resource: {type: topic, name: payments.fraud-scores.v1}\n    operations: [describe]",
     r"consumers\.yaml:\d+:\d+: \$\.consumers\[0\]: consumer 'fraud-scoring': user 'fraud-scoring' has no ACL "
     r"allowing write on its sink topic 'payments\.fraud-scores\.v1'"),
    ("consumers.yaml", "'event_time', event_time)) AS value", "'event_time', event_time)) AS value, amount",
     r"a kafka sink writes key, value, headers, partition; also selected: amount"),
])
def test_a_broken_pipeline_fails_validation_located_and_without_a_jvm(specs_copy: SpecsCopy, file: str, old: str,
                                                                      new: str, expected: str) -> None:
    specs = specs_copy()
    edit(specs / file, old, new)
    done = validate_without_java(specs)
    assert done.returncode == 1, done.stdout + done.stderr
    assert re.search(expected, done.stderr), done.stderr
    assert done.stdout.strip() == "no pyspark" and "Traceback" not in done.stderr


def test_the_example_pipelines_validate_without_a_jvm(example_specs: Path) -> None:
    done = validate_without_java(example_specs)
    assert done.returncode == 0, done.stderr
    assert "2 consumers" in done.stdout and "no pyspark" in done.stdout


def test_an_aggregation_without_a_window_over_the_watermark_never_closes(specs_copy: SpecsCopy) -> None:
    specs = specs_copy()
    edit(specs / "consumers.yaml", "             session_window.start AS session_start,\n"
                                   "             session_window.end AS session_end,\n", "")
    edit(specs / "consumers.yaml", "GROUP BY user_id, session_window(event_time, '30 minutes')", "GROUP BY user_id")
    done = validate_without_java(specs)
    assert done.returncode == 1
    assert re.search(r"\$\.consumers\[1\]\.query: consumer 'clickstream-sessionizer': group by "
                     r"window\(event_time, \.\.\.\) or session_window\(event_time, \.\.\.\): without a window over "
                     r"the watermark column, groups never close", done.stderr), done.stderr
