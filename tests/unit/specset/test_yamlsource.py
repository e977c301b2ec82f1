from __future__ import annotations

from kraftform.specset.yamlsource import format_path, parse_yaml


def test_positions_of_keys_and_items() -> None:
    doc, problems = parse_yaml("topics:\n  - name: a\n    config:\n      retention.ms: 7\n", "t.yaml")
    assert problems == [] and doc is not None
    assert doc.data == {"topics": [{"name": "a", "config": {"retention.ms": 7}}]}
    loc = doc.locate(("topics", 0, "config", "retention.ms"))
    assert (loc.file, loc.line, loc.column) == ("t.yaml", 4, 7)
    assert loc.path == '$.topics[0].config["retention.ms"]'


def test_missing_path_points_at_nearest_parent() -> None:
    doc, _ = parse_yaml("topics:\n  - name: a\n", "t.yaml")
    assert doc is not None
    loc = doc.locate(("topics", 0, "partitions"))
    assert (loc.line, loc.column, loc.path) == (2, 5, "$.topics[0].partitions")


def test_duplicate_keys_are_problems_not_silently_overwritten() -> None:
    doc, problems = parse_yaml("a: 1\nb: 2\na: 3\n", "d.yaml")
    assert doc is None
    assert [str(p) for p in problems] == ["d.yaml:3:1: $.a: duplicate key 'a' (first defined on line 1)"]


def test_syntax_error_has_line_and_column() -> None:
    doc, problems = parse_yaml("a: [1, 2\nb: 3\n", "s.yaml")
    assert doc is None
    assert len(problems) == 1
    assert problems[0].location.file == "s.yaml" and problems[0].location.line == 2
    assert problems[0].message.startswith("invalid YAML")


def test_non_string_keys_and_bad_timestamps() -> None:
    _, problems = parse_yaml("1: a\n", "k.yaml")
    assert "keys must be strings" in problems[0].message
    doc, problems = parse_yaml("when: 2026-13-45\n", "ts.yaml")
    assert doc is None and "invalid YAML" in problems[0].message


def test_anchors_merge_keys_and_recursion() -> None:
    doc, problems = parse_yaml("base: &b {x: 1}\nother:\n  <<: *b\n  y: 2\n", "m.yaml")
    assert problems == [] and doc is not None and doc.data["other"] == {"x": 1, "y": 2}
    doc, problems = parse_yaml("a: &a [*a]\n", "r.yaml")
    assert doc is not None or problems  # a recursive alias neither hangs nor crashes


def test_empty_document() -> None:
    doc, problems = parse_yaml("# only a comment\n", "e.yaml")
    assert problems == [] and doc is not None and doc.data is None


def test_format_path_quotes_keys_that_are_not_identifiers() -> None:
    assert format_path(("topics", 3, "config", "retention.ms")) == '$.topics[3].config["retention.ms"]'
    assert format_path(("cluster", "load", "peak_write_rate")) == "$.cluster.load.peak_write_rate"
    assert format_path(("x", 'a"b')) == '$.x["a\\"b"]'


def test_control_characters_are_a_located_problem_not_a_crash() -> None:
    doc, problems = parse_yaml("a: \x1f\n", "c.yaml")
    assert doc is None and problems[0].location.file == "c.yaml"
    assert problems[0].message == "invalid YAML: character '\\x1f' is not allowed (special characters are not allowed)"
    assert (problems[0].location.line, problems[0].location.column) == (1, 4)


def test_format_path_keeps_control_characters_off_the_error_line() -> None:
    # Python's splitlines() breaks at \x1e, \x85 and \u2028 too: an error line must hold none of them.
    for key in ("\x1e", "a\nb", "\x85", "\u2028", "tab\there"):
        rendered = format_path(("topics", key))
        assert rendered.splitlines() == [rendered] and rendered.isprintable(), rendered
    assert format_path(("x", "\x1e")) == '$.x["\\u001e"]'
    assert format_path(("x", "back\\slash")) == '$.x["back\\\\slash"]'
