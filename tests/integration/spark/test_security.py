"""Security is the cluster's: a consumer logs in as its own user, fails fast and in words when it may not,
and its password appears nowhere a run writes (driver log, event log, checkpoint, plan, the UI's API). The run
as users make it (`kraftform consumers run`, its files under --data-dir) is checked in test_lifecycle, whose
runs are those; here, what only a query in this process shows."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kraftform.runtime.nodes.tools import ACLS, run_kafka_tool
from kraftform.spark.checkpoint import prepare
from kraftform.spark.job import placement, start_query
from kraftform.spark.settings import job_settings

from .conftest import Pipeline, files_holding
from .test_pipelines import payments

pytestmark = pytest.mark.integration


def test_a_removed_read_acl_fails_fast_naming_the_topic_and_the_user(pipelines: Callable[..., Pipeline]) -> None:
    pipe = pipelines("fraud-scoring")
    # Behind kraftform's back (the specs would refuse it): Kafka's own tool removes the grant.
    run_kafka_tool(ACLS, ["--bootstrap-server", pipe.workspace.cluster.deployment.bootstrap, "--command-config",
                          str(pipe.workspace.command_config), "--remove", "--force", "--allow-principal",
                          f"User:{pipe.user}", "--operation", "Read", "--topic", pipe.inputs[0]])
    done = pipe.cli("run", pipe.name, "--available-now")
    assert done.returncode == 1
    assert f"user {pipe.user!r} is not allowed to read topic" in done.stderr and pipe.inputs[0] in done.stderr
    assert "Traceback" not in done.stderr and "\tat " not in done.stderr
    # No Spark session was started for a job that cannot read (its event log directory is made just before one),
    # and no checkpoint was made for it: what a clock once stood for here, seen directly.
    assert not (pipe.data_dir / "events").exists() and not (pipe.data_dir / "checkpoints").exists()


def test_a_wrong_password_fails_with_an_authentication_error(pipelines: Callable[..., Pipeline]) -> None:
    pipe = pipelines("fraud-scoring")
    secret = next(u.password.name for u in pipe.specs.users if u.name == pipe.user)
    Path(secret).write_text("not-the-password")
    done = pipe.cli("run", pipe.name, "--available-now")
    assert done.returncode == 1
    assert f"user {pipe.user!r} cannot log in" in done.stderr and "Authentication failed" in done.stderr
    assert "Traceback" not in done.stderr and "not-the-password" not in done.stderr


def test_the_password_is_in_no_plan_ui_page_or_event_log(pipelines: Callable[..., Pipeline], spark: Any,
                                                         capfd: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    pipe = pipelines("fraud-scoring")
    pipe.produce((pipe.inputs[0], p["payment_id"], p) for p in payments(200, seed=3))
    # In this process, while the query runs: its plan string, the UI's REST API, the shared session's event log.
    consumer, specs = pipe.consumer, pipe.specs
    settings = job_settings(consumer, specs)
    where = placement(consumer, tmp_path / "again")
    query = start_query(spark, consumer, settings, pipe.as_user, where,
                        prepare(where.checkpoint, consumer, settings.facts, False), print)
    try:
        deadline = time.monotonic() + 120
        while query.lastProgress is None and time.monotonic() < deadline:
            query.awaitTermination(0.5)
        assert query.lastProgress is not None, query.exception()
        query.explain(extended=True)
        ui = spark.sparkContext.uiWebUrl
        app = spark.sparkContext.applicationId
        pages = [urllib.request.urlopen(f"{ui}/api/v1/applications/{app}/{page}", timeout=30).read().decode()
                 for page in ("environment", "sql?details=true&planDescription=true", "jobs", "stages")]
        pages.append(json.dumps(json.loads(query.lastProgress.json)))
    finally:
        query.stop()
    captured = capfd.readouterr()
    # The login option is in what was read, masked: proof these were the places it could have leaked to.
    assert "kafka.sasl.jaas.config" in captured.out + "".join(pages)
    assert "redacted" in captured.out + "".join(pages)
    assert pipe.password not in captured.out + captured.err
    assert all(pipe.password not in page for page in pages)
    event_dirs = {Path(spark.sparkContext.getConf().get("spark.eventLog.dir").removeprefix("file:"))}
    assert all(files_holding(d, pipe.password) == [] for d in event_dirs)
    assert files_holding(tmp_path / "again", pipe.password) == []  # this query's checkpoint
