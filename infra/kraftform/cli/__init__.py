"""The `kraftform` command line. Each subcommand lives in a small module that registers itself here.

Exit codes, for every command: 0 success (no changes), 1 error (invalid specs, bad usage, a failed
operation), 2 success with changes or findings (diff, plan, lint). User errors never print a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from kraftform.cli import (
    cluster_commands,
    connect_commands,
    consumer_commands,
    group_commands,
    monitoring_commands,
    postgres_commands,
    reconcile_commands,
    registry_commands,
    secret_commands,
    spec_commands,
    verify_commands,
)
from kraftform.errors import KraftformError, SpecError, UsageError

EXIT_OK, EXIT_ERROR, EXIT_CHANGES = 0, 1, 2
DESCRIPTION = ("Kafka topics, ACLs, quotas, users, secure KRaft clusters and their Spark consumers,\n"
               "declared in spec files and reconciled.")
EXIT_CODES = ("exit codes: 0 success (no changes), 1 error (invalid specs, bad usage, a failed operation),\n"
              "            2 success with changes or findings (diff, plan, lint)")


class _Parser(argparse.ArgumentParser):
    """argparse exits 2 on bad usage, which would read as "changes found"; make it an error (1)."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message}\n{self.format_usage().strip()}")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="kraftform", description=DESCRIPTION, epilog=EXIT_CODES,
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    from kraftform import __version__

    parser.add_argument("--version", action="version", version=f"kraftform {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    spec_commands.register(sub)
    reconcile_commands.register(sub)
    cluster_commands.register(sub)
    secret_commands.register(sub)
    consumer_commands.register(sub)
    monitoring_commands.register(sub)
    group_commands.register(sub)
    connect_commands.register(sub)
    postgres_commands.register(sub)
    registry_commands.register(sub)
    verify_commands.register(sub)
    # `verify` runs other commands in its own process, as a user would run them; handing it this entry point
    # keeps the command modules from importing their own package.
    parser.set_defaults(entry_point=main)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        code: int = args.handler(args)
        return code
    except SpecError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        return EXIT_ERROR
    except KraftformError as exc:
        print(f"kraftform: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("kraftform: interrupted", file=sys.stderr)
        return 130


def run() -> NoReturn:
    """The `kraftform` command: `main`, and a command ended by an exception kraftform did not expect prints its
    traceback and exits at once. Python's own exit would first wait for every worker thread, and one still
    waiting on a cluster that stopped answering held a failed `plan` for 15 minutes (ci48) with its traceback
    unread."""
    try:
        code = main()
    except Exception:  # reported in full, then the exit nothing can hold
        traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_ERROR)
    sys.exit(code)
