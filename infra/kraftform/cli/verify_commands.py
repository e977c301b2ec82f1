"""`kraftform verify [--quick]`: the profiles' guarantees and kraftform's own resilience, measured."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Any

from kraftform.cli.spec_commands import DEFAULT_SPECS
from kraftform.errors import UsageError
from kraftform.runtime import RUNTIMES
from kraftform.verification import SECTIONS


def register(sub: Any) -> None:
    verify = sub.add_parser(
        "verify", help="measure the profiles' guarantees with Kafka's own tools, and kraftform's resilience",
        description="Delivery under a SIGKILLed partition leader and active controller (VerifiableProducer and "
                    "VerifiableConsumer), each profile's speed (ProducerPerformance, ConsumerPerformance), "
                    "mutated spec sets, applies SIGKILLed at random points, and a scan for secrets in "
                    "everything the run wrote; a pass/fail table at the end. Without --state-dir or "
                    "--command-config it starts a cluster from SPECS_DIR's cluster section and removes it "
                    "after. --quick takes about 9 minutes on 2 cores; the full run is described in "
                    "docs/benchmarks.md.")
    verify.add_argument("specs_dir", nargs="?", default=DEFAULT_SPECS, metavar="SPECS_DIR",
                        help="specs whose profiles and cluster section are verified (default: specs)")
    verify.add_argument("--quick", action="store_true",
                        help="the minimum sizes (100,000 records per failure run, 300 spec sets, 6 killed "
                             "applies, one roll killed 3 times) instead of the full run")
    verify.add_argument("--node-kills", type=int, metavar="N",
                        help="applies of node work (a roll, a broker added, then removed) SIGKILLed at random "
                             "points, on a cluster kraftform runs (default: 20; 3 with --quick, in a row on one "
                             "roll)")
    where = verify.add_mutually_exclusive_group()
    where.add_argument("--state-dir", type=Path, metavar="DIR",
                       help="a cluster started by `kraftform cluster up` (its nodes may be killed)")
    where.add_argument("--command-config", type=Path, metavar="FILE",
                       help="any cluster this admin client config reaches (no node is killed there)")
    verify.add_argument("--runtime", choices=RUNTIMES, default="local",
                        help="runtime of the cluster verify starts (default: local)")
    verify.add_argument("--work-dir", type=Path, metavar="DIR",
                        help="keep every tool's output here (default: a temporary directory, removed when "
                             "every check passed)")
    verify.add_argument("--keep", action="store_true", help="keep the work directory even when all passed")
    verify.add_argument("--scan", type=Path, action="append", default=[], metavar="PATH",
                        help="also scan this file or directory for secrets (e.g. `pulumi stack export` output); "
                             "repeatable")
    verify.add_argument("--skip", action="append", default=[], choices=SECTIONS, metavar="SECTION",
                        help=f"leave a section out ({', '.join(SECTIONS)}; repeatable): its row says `not run`. "
                             "CI skips performance, whose timings a machine busy with a test suite cannot judge")
    verify.add_argument("--seed", type=int, default=1, help="seed of the generated spec sets and kills")
    verify.add_argument("--format", choices=("text", "markdown", "json"), default="text")
    verify.set_defaults(handler=cmd_verify)


def cmd_verify(args: argparse.Namespace) -> int:
    from kraftform.verification.report import render_json, render_markdown, render_text
    from kraftform.verification.run import FULL, QUICK, Options, verify

    render = {"text": render_text, "markdown": render_markdown, "json": render_json}[args.format]
    mode = QUICK if args.quick else FULL
    if args.node_kills is not None:
        if args.node_kills < 0:
            raise UsageError(f"--node-kills {args.node_kills}: a count of applies, 0 or more")
        mode = dataclasses.replace(mode, node_kills=args.node_kills)
    options = Options(Path(args.specs_dir), mode, args.state_dir, args.command_config,
                      args.runtime, args.work_dir, args.keep, tuple(args.scan), args.seed, frozenset(args.skip),
                      args.entry_point)
    report, _ = verify(options, lambda line: print(line, file=sys.stderr, flush=True), render)
    print(render(report), end="")
    return 0 if report.passed else 1
