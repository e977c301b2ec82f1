"""A consumer's Spark SQL, understood offline: parsed with sqlglot's Spark dialect (no JVM), columns resolved
against the `input` view the job builds, and the facts the rest of kraftform needs read off the tree: the
output columns, whether the query keeps state, its grouping keys and aggregates, and whether it touches
record headers. Pure: `kraftform validate` calls it, so a broken query fails in review, not at deploy time.

The `input` view has the value's fields (JSON with a DDL schema, Avro with its record schema, or one `value`
string column) and the Kafka record's metadata: key, topic, partition, offset, timestamp and headers.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError, SqlglotError
from sqlglot.optimizer.qualify import qualify

from kraftform.spark import avro
from kraftform.spark.functions import SPARK_FUNCTIONS
from kraftform.specset.model import ConsumerSpec
from kraftform.versions import SPARK_VERSION

INPUT_VIEW = "input"
METADATA_COLUMNS: Mapping[str, str] = {
    "key": "STRING", "topic": "STRING", "partition": "INT", "offset": "BIGINT", "timestamp": "TIMESTAMP",
    "headers": "ARRAY<STRUCT<key: STRING, value: BINARY>>",
}
#: The struct column Spark names after a time-window grouping function: `window.start`, `session_window.end`.
WINDOW_FUNCTIONS = ("window", "session_window")
WINDOW_TYPE = "STRUCT<start: TIMESTAMP, end: TIMESTAMP>"
#: Columns a Kafka sink writes; the topic is the sink's own.
KAFKA_SINK_COLUMNS = ("key", "value", "headers", "partition")


class QueryError(Exception):
    """What is wrong with a schema or query, with the line and column inside the SQL text when known."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        self.line, self.column = line, column
        where = f"SQL line {line}, column {column}: " if line is not None else ""
        super().__init__(where + message)


@dataclass(frozen=True)
class QueryFacts:
    output_columns: tuple[str, ...]
    #: Aggregations keep state across batches (so do deduplication and joins, which `input` alone cannot have).
    stateful: bool
    #: GROUP BY expressions and aggregate calls in Spark SQL, normalized: they decide the shape of the state.
    grouping: tuple[str, ...] = ()
    aggregates: tuple[str, ...] = ()
    #: The column inside a window()/session_window() grouping, if any.
    window_column: str | None = None
    uses_headers: bool = False
    #: The value's fields the query reads (its watermark column included), in schema order: the job parses only
    #: these. None: every field (no query, or a value kept as one string).
    reads: tuple[str, ...] | None = None


def parse_schema(ddl: str) -> dict[str, str]:
    """A Spark DDL column list (`a STRING, b ARRAY<INT>`) -> {column: type}, top-level columns only."""
    try:
        table = sqlglot.parse_one(f"CREATE TABLE t ({ddl})", read="spark")
    except SqlglotError as exc:  # ParseError, and TokenError for an unterminated quote
        raise QueryError(f"not a Spark DDL column list: {_first_error(exc)}") from None
    schema = table.this
    columns: dict[str, str] = {}
    for column in schema.expressions if isinstance(schema, exp.Schema) else ():
        if not isinstance(column, exp.ColumnDef) or column.args.get("kind") is None:
            raise QueryError(f"not a column definition: {column.sql('spark')!r} (write `name TYPE`)")
        if column.name in columns:
            raise QueryError(f"column {column.name!r} is defined twice")
        columns[column.name] = column.args["kind"].sql("spark")
    if not columns:
        raise QueryError("the schema defines no column")
    return columns


def value_columns(consumer: ConsumerSpec) -> dict[str, str] | None:
    """The parsed value's fields as columns ({name: Spark SQL type}); None when the value stays one string."""
    if consumer.value.format == "json" and consumer.value.schema:
        return parse_schema(consumer.value.schema)
    if consumer.value.format == "avro" and consumer.value.schema:
        try:
            return avro.columns(consumer.value.schema)
        except (avro.AvroShapeError, ValueError, KeyError, TypeError) as exc:
            raise QueryError(f"the topics' Avro value schema: {exc}") from None
    return None


def input_columns(consumer: ConsumerSpec) -> dict[str, str]:
    """The columns of the `input` view the job builds for this consumer."""
    fields = value_columns(consumer) or {"value": "STRING"}
    clash = sorted(set(fields) & set(METADATA_COLUMNS))
    if clash:
        raise QueryError(f"value field(s) {', '.join(clash)} clash with the record's metadata columns "
                         f"({', '.join(METADATA_COLUMNS)}); rename them in the schema")
    return {**fields, **METADATA_COLUMNS}


def _position_of_column(text: str, message: str) -> tuple[int | None, int | None]:
    """Where in the SQL the column sqlglot could not resolve first appears (its message names it, not where)."""
    named = re.search(r"Column '([^']+)'", message)
    if named is None:
        return None, None
    for column in _parse(text).find_all(exp.Column):
        meta = column.this.meta if isinstance(column.this, exp.Identifier) else {}
        if column.name == named.group(1) and "line" in meta:
            return meta["line"], meta["col"] - len(column.name) + 1
    return None, None


def _first_error(exc: SqlglotError) -> str:
    errors = getattr(exc, "errors", None)
    if errors:
        first = errors[0]
        return f"{first.get('description', 'syntax error')} near {first.get('highlight', '')!r}"
    return str(exc).splitlines()[0]


def _parse(sql: str) -> exp.Query:
    try:
        statements = [s for s in sqlglot.parse(sql, read="spark") if s is not None]
    except ParseError as exc:
        first = exc.errors[0] if exc.errors else {}
        raise QueryError(f"syntax error: {first.get('description', 'cannot parse')} near "
                         f"{first.get('highlight', '')!r}", first.get("line"), first.get("col")) from None
    except SqlglotError as exc:  # TokenError: an unterminated string or comment
        raise QueryError(f"syntax error: {str(exc).splitlines()[0]}") from None
    if len(statements) != 1:
        raise QueryError(f"one SELECT statement expected, found {len(statements)}")
    statement = statements[0]
    if not isinstance(statement, exp.Query):
        raise QueryError(f"a SELECT query expected, found {statement.key.upper()}")
    return statement


#: `window(` as Spark's tumbling-window function, not SQL's WINDOW clause (`WINDOW w AS (...)` has a name between).
_WINDOW_CALL = re.compile(r"(?<![\w`.])window(?=\s*\()", re.IGNORECASE)


def _quoted_window_calls(sql: str) -> str:
    """`window(...)` with its name in backquotes, which is how sqlglot reads it as a call (bare, it expects a
    WINDOW clause and reports a syntax error for a query Spark runs). Columns reported after such a call on the
    same line are two further right than in the query's text."""
    return _WINDOW_CALL.sub("`window`", sql)


def _window_calls(node: Any) -> list[Any]:
    return [f for f in node.find_all(exp.Func)
            if (f.name if isinstance(f, exp.Anonymous) else f.sql_name()).lower() in WINDOW_FUNCTIONS]


def _called_name(call: exp.Func, text: str) -> tuple[str, int | None, int | None] | None:
    """The function name as the query writes it, with its line and column: sqlglot maps many names onto one
    expression (`nvl` and `coalesce` both become COALESCE), so the text is what Spark will be asked for. None
    for syntax that is no call by name (`CASE`, `x IN (...)`, operators)."""
    meta = call.meta
    if isinstance(call, exp.Anonymous):
        name = call.name
    elif "start" in meta and "end" in meta:
        name = text[meta["start"]:meta["end"] + 1]
        if not text[meta["end"] + 1:].lstrip().startswith("("):
            return None
    else:
        return None
    if not name.replace("_", "").isalnum():
        return None
    return name, meta.get("line"), meta.get("col")


def _check_functions(tree: exp.Query, text: str) -> None:
    """Every function the query calls must be one the pinned Spark has (`spark.functions`), or Spark refuses the
    query when the job starts, long after review."""
    for call in tree.find_all(exp.Func):
        called = _called_name(call, text)
        if called is None or called[0].lower() in SPARK_FUNCTIONS:
            continue
        name, line, column = called
        near = difflib.get_close_matches(name.lower(), SPARK_FUNCTIONS, n=1, cutoff=0.7)
        hint = f"; did you mean {near[0]}?" if near else ""
        raise QueryError(f"Spark {SPARK_VERSION} has no function {name!r}{hint}", line,
                         None if column is None else column - len(name) + 1)


def analyze(consumer: ConsumerSpec, sql: str | None = None) -> QueryFacts:
    """Parse and resolve the consumer's query (or `sql`) against its `input` view; raises QueryError."""
    columns = input_columns(consumer)
    text = consumer.query if sql is None else sql
    if text is None:  # a transform alone, or the input as it is: every field
        return QueryFacts(tuple(columns), stateful=False, uses_headers=False)
    text = _quoted_window_calls(text)
    tree = _parse(text)
    _check_functions(tree, text)
    for table in tree.find_all(exp.Table):
        if table.name.lower() != INPUT_VIEW:
            raise QueryError(f"reads {table.name!r}; a consumer's query reads only `{INPUT_VIEW}` (its topics, "
                             f"parsed)")
    if any(True for _ in tree.find_all(exp.Window)):
        raise QueryError("window functions (OVER ...) are not supported on streams; group by window() or "
                         "session_window() instead")
    windows = _window_calls(tree)
    schema = {**columns, **dict.fromkeys(WINDOW_FUNCTIONS, WINDOW_TYPE)} if windows else columns
    # `window.start` reads as table `window`, column `start` to a SQL parser; to Spark it is a struct field.
    for column in list(tree.find_all(exp.Column)):
        if column.table.lower() in WINDOW_FUNCTIONS and windows:
            column.replace(exp.Dot(this=exp.column(column.table), expression=exp.to_identifier(column.name)))
    try:
        resolved = qualify(tree, schema={INPUT_VIEW: schema}, dialect="spark", validate_qualify_columns=True,
                           quote_identifiers=False)
    except OptimizeError as exc:
        message = str(exc).split(". Line:")[0]
        line, col = _position_of_column(text, message)
        if consumer.value.format == "avro":
            message += " (not a field of the topics' declared Avro value schema: a schema change that removes or " \
                       "renames a field this query reads is refused here)"
        raise QueryError(f"{message} (the input columns are: {', '.join(columns)})", line, col) from None
    except SqlglotError as exc:
        raise QueryError(f"cannot resolve the query: {str(exc).splitlines()[0]}") from None
    groups = [g for select in resolved.find_all(exp.Select)
              for g in (select.args.get("group") or exp.Group()).expressions]
    aggregates = list(resolved.find_all(exp.AggFunc))
    distinct = any(s.args.get("distinct") for s in resolved.find_all(exp.Select))
    window_column = None
    for call in _window_calls(resolved):
        inner = next(call.find_all(exp.Column), None)
        window_column = inner.name if inner is not None else None
    assert isinstance(resolved, exp.Query)
    return QueryFacts(
        output_columns=tuple(resolved.named_selects),
        stateful=bool(groups or aggregates or distinct),
        grouping=tuple(sorted(g.sql("spark") for g in groups)),
        aggregates=tuple(sorted(a.sql("spark") for a in aggregates)),
        window_column=window_column,
        uses_headers=any(c.name == "headers" for c in resolved.find_all(exp.Column)),
        reads=_fields_read(consumer, resolved),
    )


def _fields_read(consumer: ConsumerSpec, resolved: exp.Query) -> tuple[str, ...] | None:
    """The parsed value's fields `resolved` names anywhere (`*` is expanded by then), and the watermark's column.
    Spark matches names case-insensitively, so this does too; a name it cannot tell apart keeps the field."""
    fields = value_columns(consumer)
    if fields is None:
        return None
    named = {part.lower() for c in resolved.find_all(exp.Column) for part in (c.name, c.table) if part}
    if consumer.watermark is not None:
        named.add(consumer.watermark.column.lower())
    return tuple(f for f in fields if f.lower() in named)
