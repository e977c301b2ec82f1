"""A checkpoint is reused only by a definition whose state it can hold; otherwise a reset is asked for."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from kraftform.declared import load_specs
from kraftform.errors import PlanRefusedError
from kraftform.spark.checkpoint import META_FILE, committed_offsets, prepare
from kraftform.spark.settings import job_settings

from ...conftest import EXAMPLE_SPECS

SPECS = load_specs(EXAMPLE_SPECS)
SESSIONS = next(c for c in SPECS.consumers if c.name == "clickstream-sessionizer")
SCORES = next(c for c in SPECS.consumers if c.name == "fraud-scoring")


def facts(consumer: object) -> object:
    return job_settings(consumer, dataclasses.replace(SPECS, consumers=(consumer,))).facts  # type: ignore[arg-type]


def test_a_new_checkpoint_gets_a_record_and_a_compatible_change_keeps_it(tmp_path: Path) -> None:
    first = prepare(tmp_path / "cp", SCORES, facts(SCORES), allow_reset=False)  # type: ignore[arg-type]
    assert json.loads((tmp_path / "cp" / META_FILE).read_text())["run_id"] == first.run_id
    # A stateless query's projection can change: Spark resumes from the same offsets.
    changed = dataclasses.replace(SCORES, query=SCORES.query.replace("'source', topic,", "") if SCORES.query else None)
    again = prepare(tmp_path / "cp", changed, facts(changed), allow_reset=False)  # type: ignore[arg-type]
    assert again.run_id == first.run_id


def test_a_new_grouping_key_is_a_state_reset_refused_unless_allowed(tmp_path: Path) -> None:
    checkpoint = tmp_path / "cp"
    first = prepare(checkpoint, SESSIONS, facts(SESSIONS), allow_reset=False)  # type: ignore[arg-type]
    (checkpoint / "offsets").mkdir()
    assert SESSIONS.query is not None
    regrouped = dataclasses.replace(SESSIONS, query=SESSIONS.query.replace("GROUP BY user_id,",
                                                                           "GROUP BY user_id, device,"))
    with pytest.raises(PlanRefusedError, match=r"state reset: the checkpoint .* cannot be reused \(grouping: "):
        prepare(checkpoint, regrouped, facts(regrouped), allow_reset=False)  # type: ignore[arg-type]
    again = prepare(checkpoint, regrouped, facts(regrouped), allow_reset=True)  # type: ignore[arg-type]
    assert again.run_id != first.run_id and not (checkpoint / "offsets").exists()
    [aside] = [p for p in tmp_path.iterdir() if p.name.startswith("cp.reset-")]
    assert (aside / "offsets").is_dir()  # kept, never deleted


def test_another_source_topic_is_a_state_reset_even_for_a_stateless_query(tmp_path: Path) -> None:
    prepare(tmp_path / "cp", SCORES, facts(SCORES), allow_reset=False)  # type: ignore[arg-type]
    moved = dataclasses.replace(SCORES, topics=("payments.refunds.v1",))
    with pytest.raises(PlanRefusedError, match="source topics"):
        prepare(tmp_path / "cp", moved, facts(moved), allow_reset=False)  # type: ignore[arg-type]


def test_positions_come_from_the_last_committed_batch(tmp_path: Path) -> None:
    for directory, batches in (("offsets", (0, 1, 2)), ("commits", (0, 1))):
        (tmp_path / directory).mkdir()
        for batch in batches:
            (tmp_path / directory / str(batch)).write_text(
                f'v1\n{{"batchWatermarkMs":0}}\n{{"t":{{"0":{10 * (batch + 1)},"1":{5 * (batch + 1)}}}}}\n')
    assert committed_offsets(tmp_path) == (1, {("t", 0): 20, ("t", 1): 10})
    assert committed_offsets(tmp_path / "missing") is None
