"""The query understood offline (sqlglot, no JVM): columns resolved against the `input` view, state read off."""

from __future__ import annotations

import dataclasses

import pytest

from kraftform.spark.query import QueryError, analyze, input_columns, parse_schema
from kraftform.specset.model import ConsumerSpec, SinkSpec, ValueFormat, Watermark

SCHEMA = "user_id STRING, url STRING, amount DOUBLE, event_time TIMESTAMP, tags ARRAY<STRING>, s STRUCT<a: INT>"


def consumer(query: str | None = None, schema: str = SCHEMA) -> ConsumerSpec:
    return ConsumerSpec("c", ("t",), "u", SinkSpec("kafka", topic="o"), "c", value=ValueFormat("json", schema),
                        query=query)


def test_a_ddl_schema_gives_its_top_level_columns_only() -> None:
    assert parse_schema(SCHEMA) == {"user_id": "STRING", "url": "STRING", "amount": "DOUBLE",
                                    "event_time": "TIMESTAMP", "tags": "ARRAY<STRING>", "s": "STRUCT<a: INT>"}
    assert list(input_columns(consumer()))[-6:] == ["key", "topic", "partition", "offset", "timestamp", "headers"]


@pytest.mark.parametrize(("schema", "message"), [
    ("user_id STRING, user_id INT", "column 'user_id' is defined twice"),
    ("user_id STRING, amount FLOAT DOUBLE", "not a Spark DDL column list"),
    ("user_id STRING, x", "not a column definition: 'x'"),
    ("user_id STRING COMMENT 'unterminated", "not a Spark DDL column list"),
    ("topic STRING", "clash with the record's metadata columns"),
])
def test_bad_schemas_are_named(schema: str, message: str) -> None:
    with pytest.raises(QueryError, match=message):
        input_columns(consumer(schema=schema))


def test_a_stateless_projection() -> None:
    facts = analyze(consumer("SELECT user_id AS key, to_json(named_struct('u', url)) AS value FROM input "
                             "WHERE amount > 10"))
    assert facts.output_columns == ("key", "value") and not facts.stateful and not facts.uses_headers


def test_a_session_window_aggregation_and_its_state() -> None:
    facts = analyze(consumer("SELECT user_id, session_window.start AS s, count(*) AS n, max(amount) AS top "
                             "FROM input GROUP BY user_id, session_window(event_time, '30 minutes')"))
    assert facts.stateful and facts.window_column == "event_time"
    assert facts.output_columns == ("user_id", "s", "n", "top")
    assert facts.grouping == ("SESSION_WINDOW(input.event_time, '30 minutes')", "input.user_id")
    assert facts.aggregates == ("COUNT(*)", "MAX(input.amount)")


def test_headers_are_noticed_so_the_source_reads_them() -> None:
    assert analyze(consumer("SELECT headers, url AS value FROM input")).uses_headers


@pytest.mark.parametrize(("query", "message"), [
    ("SELECT amont FROM input", "Column 'amont' could not be resolved .*the input columns are: user_id, url"),
    ("SELECT url FROM orders", "reads 'orders'; a consumer's query reads only `input`"),
    ("SELECT url FROM input WHERE", "syntax error"),
    ("SELECT 1; SELECT 2", "one SELECT statement expected, found 2"),
    # Found by tests/unit/specset/test_mutations.py: a quote dropped from the example query crashed validate.
    ("SELECT to_json(named_struct(\n event_time', event_time)) AS value FROM input", "syntax error: Error tokenizing"),
    ("SELECT row_number() OVER (ORDER BY event_time) FROM input", "window functions .* are not supported"),
])
def test_broken_queries_are_named(query: str, message: str) -> None:
    with pytest.raises(QueryError, match=message):
        analyze(consumer(query))


@pytest.mark.parametrize(("query", "message", "line", "column"), [
    ("SELECT user_id AS key,\n  roundx(amount, 2) AS value FROM input",
     "Spark 4.2.0 has no function 'roundx'; did you mean round?", 2, 3),
    ("SELECT user_id AS key, iff(amount > 1, 'a', 'b') AS value FROM input", "no function 'iff'; did you mean if?",
     1, 24),
    # sqlglot knows it (as TIMESTAMP_TRUNC); Spark does not: the name as written is what Spark is asked for.
    ("SELECT user_id AS key, timestamp_trunc('hour', event_time) AS value FROM input", "no function 'timestamp_trunc'",
     1, 24),
])
def test_a_function_spark_does_not_have_is_a_located_error(query: str, message: str, line: int, column: int) -> None:
    with pytest.raises(QueryError, match=message) as caught:
        analyze(consumer(query))
    assert (caught.value.line, caught.value.column) == (line, column)


def test_functions_spark_has_pass_whatever_name_sqlglot_gives_them() -> None:
    analyze(consumer("SELECT user_id AS key, nvl(url, 'x') AS a, ifnull(url, 'y') AS b, date_trunc('hour', event_time) "
                     "AS c, percentile_approx(amount, 0.5) AS d, CAST(amount AS STRING) AS value, "
                     "extract(YEAR FROM event_time) AS e, transform(tags, t -> upper(t)) AS f, if(amount > 1, 1, 2) "
                     "AS g, position('a' IN url) AS h, count(*) AS n FROM input GROUP BY user_id, url, amount, "
                     "event_time, tags"))


@pytest.mark.parametrize(("query", "reads"), [
    ("SELECT user_id, url FROM input WHERE amount >= 0", ("user_id", "url", "amount")),
    ("SELECT USER_ID AS k, Tags FROM input", ("user_id", "tags")),  # Spark's names are case-insensitive
    ("SELECT s.a AS a, key FROM input", ("s",)),  # a struct's field: the struct is parsed
    ("SELECT * FROM input", ("user_id", "url", "amount", "event_time", "tags", "s")),
    ("SELECT count(*) AS n, session_window.start AS w FROM input GROUP BY session_window(event_time, '1 minute')",
     ("event_time",)),
    ("SELECT key, offset FROM input", ()),  # the record's own columns only: nothing to parse
])
def test_only_the_value_fields_a_query_reads_are_parsed(query: str, reads: tuple[str, ...]) -> None:
    assert analyze(consumer(query)).reads == reads


def test_every_field_is_parsed_without_a_query_and_the_watermark_column_always_is() -> None:
    assert analyze(consumer()).reads is None  # a transform alone sees the whole input
    watermarked = dataclasses.replace(consumer("SELECT url FROM input"), watermark=Watermark("event_time", 1000))
    assert analyze(watermarked).reads == ("url", "event_time")
    assert analyze(dataclasses.replace(consumer("SELECT value FROM input"), value=ValueFormat())).reads is None


def test_a_tumbling_window_call_is_a_function_not_a_window_clause() -> None:
    facts = analyze(consumer("SELECT window.start AS w, count(*) AS n FROM input GROUP BY window(event_time, "
                             "'1 minute')"))
    assert facts.stateful and facts.window_column == "event_time" and facts.output_columns == ("w", "n")
    with pytest.raises(QueryError, match="has no function 'windw'"):
        analyze(consumer("SELECT count(*) AS n FROM input GROUP BY windw(event_time, '1 minute')"))
