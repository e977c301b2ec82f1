"""The consumers' checks: references, grants and the pipeline itself (its query against the `input` view, its
watermark, state and sink), run by `kraftform validate` with the model's own checks (`kraftform.declared`). Pure,
no JVM: the query is analysed with sqlglot (`spark.query`).
"""

from __future__ import annotations

from collections.abc import Iterator

from kraftform.errors import Problem
from kraftform.spark.query import KAFKA_SINK_COLUMNS, QueryError, input_columns
from kraftform.spark.settings import SettingsError, job_settings
from kraftform.specset.checks import acl_allows
from kraftform.specset.model import ConsumerSpec, SpecSet


def check_consumers(s: SpecSet) -> Iterator[Problem]:
    topics = {t.name for t in s.topics}
    users = {u.name for u in s.users}
    for c in s.consumers:
        named = f"consumer {c.name!r}"
        for name in c.topics:
            if name not in topics:
                yield Problem(c.location, f"{named} reads undeclared topic {name!r}")
            elif c.user in users and not acl_allows(s.acls, c.user, "topic", name, "read"):
                yield Problem(c.location, f"{named}: user {c.user!r} has no ACL allowing read on topic {name!r}; "
                                          f"the authorizer denies by default")
        if c.user not in users:
            yield Problem(c.location, f"{named} runs as undeclared user {c.user!r}")
        elif not acl_allows(s.acls, c.user, "group", f"{c.group_id_prefix}-0", "read"):
            yield Problem(c.location, f"{named}: user {c.user!r} has no ACL allowing read on consumer groups "
                                      f"{c.group_id_prefix!r}* (a prefixed group ACL is usual)")
        if c.sink.type == "parquet" and not c.sink.path:
            yield Problem(c.location, f"{named}: a parquet sink needs `sink.path`")
        if c.sink.type == "kafka":
            if c.sink.topic not in topics:
                yield Problem(c.location, f"{named}: a kafka sink needs `sink.topic` naming a declared topic, "
                                          f"got {c.sink.topic!r}")
            elif c.user in users and not acl_allows(s.acls, c.user, "topic", c.sink.topic, "write"):
                yield Problem(c.location, f"{named}: user {c.user!r} has no ACL allowing write on its sink topic "
                                          f"{c.sink.topic!r}")
        if c.profile not in s.profiles:
            yield Problem(c.location, f"{named}: unknown profile {c.profile!r} "
                                      f"(known: {', '.join(sorted(s.profiles))})")
        else:
            yield from _check_pipeline(s, c, users)


def _check_pipeline(s: SpecSet, c: ConsumerSpec, users: set[str]) -> Iterator[Problem]:
    """The query, its columns and its state, against the `input` view and the sink (no JVM: sqlglot)."""
    named = f"consumer {c.name!r}"
    if c.value.format == "json" and not c.value.schema:
        yield Problem(c.location, f"{named}: value format json needs `value.schema` (Spark DDL: `id STRING, ...`)")
        return
    try:
        columns = input_columns(c)
    except QueryError as exc:
        yield Problem(c.location, f"{named}: value.schema: {exc}")
        return
    try:
        settings = job_settings(c, s)
    except QueryError as exc:
        yield Problem(c.query_location, f"{named}: {exc}")
        return
    except SettingsError as exc:
        yield Problem(c.location, f"{named}: {exc}")
        return
    facts = settings.facts
    if c.watermark is not None:
        kind = columns.get(c.watermark.column)
        if kind is None:
            yield Problem(c.location, f"{named}: watermark column {c.watermark.column!r} is not an input column")
        elif kind.upper() != "TIMESTAMP":
            yield Problem(c.location, f"{named}: watermark column {c.watermark.column!r} is {kind}, not TIMESTAMP")
    if facts.stateful and c.sink.type != "console":
        if c.watermark is None:
            yield Problem(c.query_location, f"{named}: an aggregation on a stream needs a `watermark` (append mode "
                                            f"writes a group once the watermark passes its window)")
        elif facts.window_column != c.watermark.column:
            yield Problem(c.query_location, f"{named}: group by window({c.watermark.column}, ...) or "
                                            f"session_window({c.watermark.column}, ...): without a window over the "
                                            f"watermark column, groups never close and nothing is written")
    if c.sink.type == "kafka":
        outputs = set(facts.output_columns)
        if "value" not in outputs:
            yield Problem(c.query_location, f"{named}: a kafka sink needs a `value` column "
                                            f"(selected: {', '.join(facts.output_columns)})")
        extra = sorted(outputs - set(KAFKA_SINK_COLUMNS))
        if extra:
            yield Problem(c.query_location, f"{named}: a kafka sink writes {', '.join(KAFKA_SINK_COLUMNS)}; also "
                                            f"selected: {', '.join(extra)} (fold them into value, e.g. "
                                            f"to_json(named_struct(...)))")
        if settings.exactly_once and c.user in users and not acl_allows(
                s.acls, c.user, "transactional_id", settings.transactional_id, "write"):
            yield Problem(c.location, f"{named}: the exactly-once kafka sink writes in transactions as "
                                      f"{settings.transactional_id!r}; user {c.user!r} has no ACL allowing write on "
                                      f"that transactional_id (a prefixed {c.group_id_prefix!r} ACL is usual)")
