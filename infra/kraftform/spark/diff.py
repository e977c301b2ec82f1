"""The consumers' part of an offline diff of two spec revisions (`kraftform diff`): what each job does with a
change, and which changes its checkpoint cannot serve. Pure; composed with the rest of the diff in
`kraftform.declared.diff_specs`.
"""

from __future__ import annotations

from kraftform.plan.changes import Action, Change, Kind, Safety
from kraftform.plan.render import listed
from kraftform.plan.schema_fields import describe
from kraftform.plan.specdiff import flat_fields
from kraftform.spark import avro
from kraftform.spark.checkpoint import incompatibilities, state_shape
from kraftform.spark.query import QueryError, analyze
from kraftform.spark.schema_gate import readers_broken
from kraftform.spark.settings import job_settings
from kraftform.specset.model import ConsumerSpec, SpecSet


def diff_consumers(base: SpecSet, head: SpecSet) -> list[Change]:
    """Each consumer added, removed or changed, classed by what its job does with the change; a change its
    checkpoint cannot serve is destructive (a state reset)."""
    before = {c.name: c for c in base.consumers}
    after = {c.name: c for c in head.consumers}
    changes: list[Change] = []
    for name, c in after.items():
        old = before.get(name)
        if old is None:
            changes.append(Change(Action.CREATE, Kind.CONSUMER, name, Safety.SAFE, "new streaming job",
                                  "topics", None, ", ".join(c.topics)))
            continue
        if _avro_schema_changed(old, c):
            changes.append(_avro_reader_change(old, c))
        for key, a, b in _consumer_fields(old, c):
            disruptive = key in ("topics", "group_id_prefix", "user", "sink", "profile", "starting_offsets",
                                 "query", "transform", "value", "watermark", "checkpoint")
            changes.append(Change(Action.UPDATE, Kind.CONSUMER, name,
                                  Safety.DISRUPTIVE if disruptive else Safety.SAFE,
                                  "the job restarts with a new query plan" if disruptive
                                  else "the job restarts from its checkpoint", key, a, b))
        reset = _state_reset(base, old, head, c)
        if reset:
            changes.append(Change(Action.UPDATE, Kind.CONSUMER, name, Safety.DESTRUCTIVE,
                                  f"state reset: the checkpoint cannot be reused ({'; '.join(reset)}); the job "
                                  f"starts from a new one (consumers run --allow-destructive)", "checkpoint"))
    changes += _gate(base, head)
    for name, old in before.items():
        if name not in after:
            changes.append(Change(Action.DELETE, Kind.CONSUMER, name, Safety.DISRUPTIVE,
                                  "streaming job stopped (its output and checkpoint are kept)", "topics",
                                  ", ".join(old.topics), None))
    return changes


def _gate(base: SpecSet, head: SpecSet) -> list[Change]:
    """Value schemas changed between the revisions that break what a declared Avro consumer reads."""
    before = {s.name: s for s in base.subjects}
    changes = []
    for subject in head.subjects:
        old = before.get(subject.name)
        broken = () if old is None else readers_broken(subject, old.schema, f"the base revision ({old.file})",
                                                       head.consumers)
        if broken:
            changes.append(Change(Action.REFUSE, Kind.SUBJECT, subject.name, Safety.DESTRUCTIVE,
                                  f"the value schema of topic {subject.topic!r} breaks what declared consumers read: "
                                  f"{'; '.join(broken)}", "schema", old.file if old else None, subject.file))
    return changes


def _state_reset(base: SpecSet, old: ConsumerSpec, head: SpecSet, new: ConsumerSpec) -> list[str]:
    """Why `old`'s checkpoint cannot serve `new` (both revisions are valid, so their queries analyze)."""
    return incompatibilities(state_shape(old, job_settings(old, base).facts),
                             state_shape(new, job_settings(new, head).facts))


def _avro_schema_changed(old: ConsumerSpec, new: ConsumerSpec) -> bool:
    return (old.value.format == new.value.format == "avro" and old.value.schema is not None
            and new.value.schema is not None and old.value.schema != new.value.schema)


def _avro_reader_change(old: ConsumerSpec, new: ConsumerSpec) -> Change:
    """An Avro consumer's topics declaring another value schema, as the fields that changed. The job decodes each
    writer version into the columns its query reads: while those keep their names and types its query plan and
    output are the same, and it only restarts from its checkpoint to know the new writer version (it stops on a
    record of a version it does not know rather than guess). A field it reads that changed is what the consumer
    gate refuses (`_gate`)."""
    assert old.value.schema is not None and new.value.schema is not None
    fields = describe(old.value.schema, new.value.schema)
    try:
        reads = analyze(new).reads
        before, after = avro.columns(old.value.schema), avro.columns(new.value.schema)
    except (QueryError, avro.AvroShapeError, ValueError, KeyError, TypeError):
        return Change(Action.UPDATE, Kind.CONSUMER, new.name, Safety.DISRUPTIVE,
                      "the job restarts with a new query plan", "value schema", None, fields)
    if reads is None:
        why = ("it reads every field (SELECT * or a transform): its output follows the schema, and the job "
               "restarts with a new query plan") if before != after else \
            "it reads every field and their types are the same: the job restarts from its checkpoint"
        return Change(Action.UPDATE, Kind.CONSUMER, new.name,
                      Safety.DISRUPTIVE if before != after else Safety.SAFE, why, "value schema", None, fields)
    changed = [f for f in reads if before.get(f) != after.get(f)]
    if changed:
        return Change(Action.UPDATE, Kind.CONSUMER, new.name, Safety.DISRUPTIVE,
                      f"fields it reads change ({', '.join(changed)}): the job restarts with a new query plan",
                      "value schema", None, fields)
    return Change(Action.UPDATE, Kind.CONSUMER, new.name, Safety.SAFE,
                  f"the fields it reads ({listed(list(reads))}) keep their types: its query and output are the same; "
                  f"the job restarts from its checkpoint to know the new writer version", "value schema", None, fields)


def _consumer_fields(old: ConsumerSpec, new: ConsumerSpec) -> list[tuple[str, str, str]]:
    """Changed fields by their top-level name. Queries span lines; a plan line shows them on one. An Avro
    consumer's value schema is the topics' (`_avro_reader_change` shows it by fields), not one of its settings."""
    a, b = ({k: " ".join(v.split()) for k, v in flat_fields(c).items()} for c in (old, new))
    if _avro_schema_changed(old, new):
        a.pop("value.schema"), b.pop("value.schema")
    return [(k.split(".")[0], a.get(k, ""), b.get(k, "")) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
