"""What a consumer's checkpoint holds and whether a changed consumer can reuse it.

Spark keeps, per checkpoint, the source offsets of every micro-batch (`offsets/N`), which batches finished
(`commits/N`) and the state of stateful operators. A new source topic, or a stateful query whose grouping,
aggregates or watermark changed, cannot resume from that state: Spark either fails at start or, worse,
reads old state under a new shape. kraftform records the state-relevant facts of the definition beside
Spark's files (`kraftform.json`) and compares them before each run, and `diff` compares them between spec
revisions: such a change is destructive ("state reset") and needs --allow-destructive.

`run_id` names one checkpoint's life: the sinks key what they write by (run_id, batch id), so a reset
checkpoint, whose batch ids start again at 0, never mistakes its batches for the old ones.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kraftform.errors import PlanRefusedError, UsageError
from kraftform.spark.query import QueryFacts
from kraftform.specset.model import ConsumerSpec

META_FILE = "kraftform.json"


@dataclass(frozen=True)
class StateShape:
    """The facts of a definition that its checkpoint depends on."""

    topics: tuple[str, ...]
    stateful: bool
    grouping: tuple[str, ...]
    aggregates: tuple[str, ...]
    watermark: str | None
    value_schema: str | None

    @classmethod
    def from_dict(cls, raw: Any) -> StateShape:
        """From its JSON form (the checkpoint record, a Pulumi input): lists back to tuples."""
        return cls(tuple(raw["topics"]), bool(raw["stateful"]), tuple(raw["grouping"]), tuple(raw["aggregates"]),
                   raw.get("watermark"), raw.get("value_schema"))


def state_shape(consumer: ConsumerSpec, facts: QueryFacts) -> StateShape:
    schema = " ".join(consumer.value.schema.split()) if consumer.value.schema else None
    return StateShape(tuple(sorted(consumer.topics)), facts.stateful, facts.grouping, facts.aggregates,
                      consumer.watermark.column if consumer.watermark else None,
                      schema if facts.stateful else None)


def incompatibilities(old: StateShape, new: StateShape) -> list[str]:
    """Why a checkpoint made for `old` cannot serve `new` (empty: it can)."""
    reasons = []
    if old.topics != new.topics:
        reasons.append(f"source topics {', '.join(old.topics)} -> {', '.join(new.topics)}")
    if old.stateful or new.stateful:
        for label, a, b in (("stateful", old.stateful, new.stateful), ("grouping", old.grouping, new.grouping),
                            ("aggregates", old.aggregates, new.aggregates),
                            ("watermark column", old.watermark, new.watermark),
                            ("value schema of a stateful query", old.value_schema, new.value_schema)):
            if a != b:
                reasons.append(f"{label}: {_show(a)} -> {_show(b)}")
    return reasons


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        return ", ".join(value) or "none"
    return str(value)


@dataclass(frozen=True)
class CheckpointMeta:
    run_id: str
    consumer: str
    shape: StateShape


def _read_meta(checkpoint: Path) -> CheckpointMeta | None:
    path = checkpoint / META_FILE
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        return CheckpointMeta(data["run_id"], data["consumer"], StateShape.from_dict(data["shape"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise UsageError(f"{path}: not a kraftform checkpoint record ({exc}); move the checkpoint away to "
                         f"start over") from None


def prepare(checkpoint: Path, consumer: ConsumerSpec, facts: QueryFacts, allow_reset: bool) -> CheckpointMeta:
    """The checkpoint's record for this run: made for a new checkpoint, checked for an existing one. An
    incompatible one is refused, or with `allow_reset` moved aside (kept, never deleted) for a fresh start."""
    shape = state_shape(consumer, facts)
    existing = _read_meta(checkpoint)
    if existing is None and checkpoint.is_dir() and any(checkpoint.iterdir()):
        raise UsageError(f"{checkpoint} holds files but no {META_FILE}: not a checkpoint kraftform made; "
                         f"choose another checkpoint location")
    if existing is not None:
        reasons = incompatibilities(existing.shape, shape)
        if not reasons:
            return existing
        if not allow_reset:
            raise PlanRefusedError(
                f"consumer {consumer.name!r}: state reset: the checkpoint {checkpoint} cannot be reused "
                f"({'; '.join(reasons)}). Run with --allow-destructive to start from a new checkpoint (the old "
                f"one is kept aside; the sink's earlier output stays)")
        aside = checkpoint.with_name(f"{checkpoint.name}.reset-{time.strftime('%Y%m%dT%H%M%S')}")
        checkpoint.rename(aside)
    meta = CheckpointMeta(uuid.uuid4().hex[:12], consumer.name, shape)
    checkpoint.mkdir(parents=True, exist_ok=True)
    (checkpoint / META_FILE).write_text(json.dumps(asdict(meta), indent=2) + "\n")
    return meta


def committed_offsets(checkpoint: Path) -> tuple[int, dict[tuple[str, int], int]] | None:
    """The last finished micro-batch and the Kafka offsets it read up to (the next ones to read), from
    Spark's offset and commit logs; None before the first batch finished."""
    commits = [int(p.name) for p in (checkpoint / "commits").glob("[0-9]*") if p.name.isdigit()]
    if not commits:
        return None
    batch = max(commits)
    lines = (checkpoint / "offsets" / str(batch)).read_text().splitlines()
    positions: dict[tuple[str, int], int] = {}
    for line in lines[2:]:  # "v1", the batch metadata, then one JSON object per source
        if line.strip().startswith("{"):
            for topic, partitions in json.loads(line).items():
                positions.update({(topic, int(p)): int(o) for p, o in partitions.items()})
    return batch, positions
