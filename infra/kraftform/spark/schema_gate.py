"""The consumer gate: a new version of a topic's value schema checked against what the declared Avro consumers of
that topic read. Pure; `plan` (against the registry's latest version) and `diff` (against the base revision) ask
it, and refuse the version when it answers.

The registry checks a version against versions; only kraftform knows which fields a downstream job's SQL uses.
A field a consumer reads must keep its type (records already written are decoded into the declared type: a double
read as a string fails the job, a long read as an int loses digits), and a field it reads that earlier versions
did not have needs a default (those records get it). A field removed or renamed never gets here: the consumer's
SQL no longer resolves and `validate` names the place (spark.query).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from kraftform.spark import avro
from kraftform.spark.query import QueryError, analyze
from kraftform.specset.model import ConsumerSpec, SubjectSpec


def _sql_line(consumer: ConsumerSpec, field: str) -> str:
    """Where the consumer names the field: its SQL's line (or its watermark), for the reader of the refusal."""
    where = consumer.query_location
    if consumer.watermark is not None and consumer.watermark.column.lower() == field.lower():
        return f"its watermark, {consumer.location.file}:{consumer.location.line}"
    for number, line in enumerate((consumer.query or "").splitlines(), start=1):
        if re.search(rf"(?<![\w.]){re.escape(field)}(?!\w)", line, re.IGNORECASE):
            return f"SQL line {number} of its query at {where.file}:{where.line}: {line.strip()}"
    return f"its query at {where.file}:{where.line}"


def _defaults(schema: str) -> set[str]:
    return {f["name"] for f in json.loads(schema).get("fields", ()) if "default" in f}


def readers_broken(subject: SubjectSpec, old_schema: str, old_label: str,
                   consumers: Iterable[ConsumerSpec]) -> tuple[str, ...]:
    """Why the declared version of `subject` breaks a declared Avro consumer reading the records written with
    `old_schema` (called `old_label` in the answer); empty when it breaks none."""
    if subject.part != "value" or subject.schema_type != "AVRO":
        return ()
    try:
        new, defaults = avro.columns(subject.schema), _defaults(subject.schema)
    except (avro.AvroShapeError, ValueError, KeyError, TypeError):
        return ()
    try:
        old = avro.columns(old_schema)
    except (avro.AvroShapeError, ValueError, KeyError, TypeError):
        old = {}
    out: list[str] = []
    for consumer in consumers:
        if consumer.value.format != "avro" or subject.topic not in consumer.topics:
            continue
        try:
            reads = analyze(consumer).reads
        except QueryError:
            continue  # `validate` reports it, at its place
        for field in reads if reads is not None else tuple(new):
            before, after = old.get(field), new.get(field)
            if after is None:
                continue
            if before is None and field not in defaults:
                why = (f"{old_label} has no field {field!r} and the declared schema gives it no default: its records "
                       f"cannot be decoded")
            elif before is not None and before != after:
                why = f"it is {before} in {old_label}, {after} as declared"
            else:
                continue
            out.append(f"consumer {consumer.name!r} reads field {field!r} ({_sql_line(consumer, field)}); {why}")
    return tuple(out)
