"""The CLI as users run it: exit codes, output shapes, and never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kraftform.cli import main

from ...conftest import INVALID_FIXTURES, SpecsCopy, edit


def run(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kraftform", *argv], capture_output=True, text=True,
                          cwd=cwd, check=False, timeout=120)


def test_validate_example_prints_one_line_summary(example_specs: Path) -> None:
    done = run("validate", str(example_specs))
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1 and "valid. Cluster 'platform'" in done.stdout
    assert "16 topics" in done.stdout and done.stderr == ""


@pytest.mark.parametrize("case", ["yaml_syntax", "references", "wrong_types"])
def test_invalid_specs_exit_1_with_located_errors_and_no_traceback(case: str) -> None:
    done = run("validate", ".", cwd=INVALID_FIXTURES / case)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert done.stderr.splitlines() == (INVALID_FIXTURES / case / "expected.txt").read_text().splitlines()


def test_usage_errors_exit_1_not_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "missing")]) == 1
    assert "not a directory" in capsys.readouterr().err
    assert main(["diff", "only-one"]) == 1
    assert "usage:" in capsys.readouterr().err
    assert main(["no-such-command"]) == 1
    assert main(["profile", "show", "nope", str(INVALID_FIXTURES.parents[1].parent / "specs")]) == 1
    assert "unknown profile 'nope'" in capsys.readouterr().err
    # Refused before anything is built (no Docker engine is needed to be told).
    assert main(["images", "build", "--kafka-version", "4.9.9"]) == 1
    assert "--kafka-version 4.9.9: not a supported Kafka release" in capsys.readouterr().err


def test_diff_exit_codes_and_formats(specs_copy: SpecsCopy, capsys: pytest.CaptureFixture[str]) -> None:
    base, head = specs_copy("base"), specs_copy("head")
    assert main(["diff", str(base), str(head)]) == 0
    assert capsys.readouterr().out == "Diff: No changes.\n"  # two revisions compared, not a cluster planned
    edit(head / "topics" / "payments.yaml", "partitions: 12", "partitions: 6")
    edit(head / "topics" / "orders.yaml", "partitions: 3", "partitions: 9")
    assert main(["diff", str(base), str(head), "--format", "json"]) == 2
    data = json.loads(capsys.readouterr().out)
    safety = {c["resource"]: c["safety"] for c in data["changes"]}
    assert safety == {"payments.transactions.v1": "destructive", "orders.dlq.v1": "disruptive"}
    assert main(["diff", str(base), str(head), "--format", "markdown"]) == 2
    assert capsys.readouterr().out.startswith("## kraftform diff")
    edit(head / "cluster.yaml", "brokers: 3", "brokers: x")
    assert main(["diff", str(base), str(head)]) == 1


def test_size_prints_table_and_strict_flags_undersized(
    specs_copy: SpecsCopy, capsys: pytest.CaptureFixture[str]
) -> None:
    specs = specs_copy()
    assert main(["size", str(specs)]) == 0
    out = capsys.readouterr().out
    assert "brokers (storage)" in out and "large enough" in out
    edit(specs / "cluster.yaml", "brokers: 3", "brokers: 3\n  # grown load below")
    edit(specs / "cluster.yaml", "messages_per_day: 300000000", "messages_per_day: 3000000000")
    assert main(["size", str(specs)]) == 0
    assert "warning: cluster 'platform' declares 3 brokers but needs" in capsys.readouterr().out
    assert main(["size", str(specs), "--strict"]) == 2


def test_profile_show_builtin_and_spec_defined(example_specs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", "show", "latency", str(example_specs)]) == 0
    out = capsys.readouterr().out
    assert "linger.ms = 0" in out and "num.replica.fetchers = 4" in out
    assert main(["profile", "show", "payments-critical", str(example_specs), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["topic"]["retention.ms"] == "2592000000" and data["producer"]["acks"] == "all"


def test_console_script_is_installed() -> None:
    done = subprocess.run(["kraftform", "--version"], capture_output=True, text=True, check=False)
    assert done.returncode == 0 and done.stdout.startswith("kraftform ")


UNEXPECTED = """
import threading
import kraftform.cli as cli

def handler(args):
    threading.Thread(target=threading.Event().wait).start()  # a worker that never ends, and is no daemon
    raise RuntimeError("nobody expected this")

class Args:
    handler = staticmethod(handler)

class Parser:
    def parse_args(self, argv):
        return Args()

cli.build_parser = Parser
cli.run()
"""


def test_a_command_ended_by_an_unexpected_exception_shows_its_traceback_and_exits_at_once() -> None:
    """Not held by a worker thread still waiting (Python's own exit joins them; ci48's `plan` waited 900 s)."""
    done = subprocess.run([sys.executable, "-c", UNEXPECTED], capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 1, done.stderr
    assert "Traceback" in done.stderr and "RuntimeError: nobody expected this" in done.stderr


def test_plan_needs_a_readable_command_config(example_specs: Path, tmp_path: Path) -> None:
    missing = run("plan", str(example_specs))
    assert missing.returncode == 1 and "--command-config" in missing.stderr
    absent = run("plan", str(example_specs), "--command-config", str(tmp_path / "admin.properties"))
    assert absent.returncode == 1 and "no such command config file" in absent.stderr
    jks = tmp_path / "client.properties"
    jks.write_text("bootstrap.servers=h:9092\nsecurity.protocol=SSL\nssl.truststore.location=/etc/ts.jks\n")
    wrong = run("apply", str(example_specs), "--command-config", str(jks), "--auto-approve")
    assert wrong.returncode == 1 and f"{jks}: ssl.truststore.type must be PEM" in wrong.stderr
    assert "Traceback" not in missing.stderr + absent.stderr + wrong.stderr


def test_a_registry_kraftform_runs_is_not_planned_against_a_cluster_it_did_not_make(specs_copy: SpecsCopy,
                                                                                     tmp_path: Path) -> None:
    specs = specs_copy()
    (specs / "registry.yaml").write_text("registry: {}\n")
    config = tmp_path / "admin.properties"
    config.write_text("bootstrap.servers=127.0.0.1:1\nsecurity.protocol=SASL_SSL\n")
    for command in ("plan", "apply"):
        done = run(command, str(specs), "--command-config", str(config), *(("--auto-approve",) if command == "apply"
                                                                             else ()))
        assert done.returncode == 1, done.stdout + done.stderr
        assert f"{specs / 'registry.yaml'}:1:1: $.registry: the specs' schema registry is the one kraftform runs" \
            in done.stderr and "Traceback" not in done.stderr


def test_import_refuses_a_non_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "cluster.yaml").write_text("cluster: {}\n")
    done = run("import", str(tmp_path), "--command-config", str(tmp_path / "none.properties"))
    assert done.returncode == 1 and "is not empty" in done.stderr


@pytest.mark.parametrize("argv", [["cluster", "up"], ["cluster", "status"], ["cluster", "down"],
                                  ["consumers", "run", "fraud-scoring"], ["consumers", "status"],
                                  ["consumers", "feed", "fraud-scoring"]])
def test_every_command_that_finds_a_cluster_by_its_state_defaults_to_one_directory(argv: list[str]) -> None:
    from kraftform.cli import build_parser
    from kraftform.cli.cluster_commands import DEFAULT_STATE

    assert build_parser().parse_args(argv).state_dir == Path(DEFAULT_STATE)
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    assert f"--state-dir {DEFAULT_STATE} " in readme  # the quick start's cluster is the default one


def test_top_level_help_speaks_to_users_and_states_the_exit_codes() -> None:
    done = run("--help")
    assert done.returncode == 0
    assert "module" not in done.stdout and "registers" not in done.stdout
    assert "spec files" in done.stdout and "2 success with changes" in done.stdout
