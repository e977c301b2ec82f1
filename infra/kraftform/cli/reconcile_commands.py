"""`kraftform plan`, `apply` and `import`: the specs against a live cluster."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from kraftform.cli.spec_commands import DEFAULT_SPECS
from kraftform.cluster.connection import Connection, read_connection
from kraftform.declared import load_specs
from kraftform.errors import UsageError
from kraftform.kafka.apply import ApplyOptions
from kraftform.kafka.reconcile import LivePlan, apply_cluster, plan_cluster
from kraftform.plan.render import RENDERERS, render_text, summary
from kraftform.specset.model import Security, SpecSet
from kraftform.units import parse_rate

COMMAND_CONFIG_HELP = ("client properties of an admin (super) user: the admin.properties written by "
                       "`kraftform cluster up`, or the file you give Kafka's tools as --command-config")


def register(sub: Any) -> None:
    p = sub.add_parser("plan", help="compare the specs with a live cluster; exit 2 when changes are needed")
    p.add_argument("specs_dir", nargs="?", default=DEFAULT_SPECS, metavar="SPECS_DIR")
    p.add_argument("--command-config", required=True, type=Path, metavar="FILE", help=COMMAND_CONFIG_HELP)
    p.add_argument("--format", choices=tuple(RENDERERS), default="text")
    p.set_defaults(handler=cmd_plan)

    p = sub.add_parser("apply", help="make a live cluster match the specs, then check that it does")
    p.add_argument("specs_dir", nargs="?", default=DEFAULT_SPECS, metavar="SPECS_DIR")
    p.add_argument("--command-config", required=True, type=Path, metavar="FILE", help=COMMAND_CONFIG_HELP)
    p.add_argument("--allow-destructive", action="store_true",
                   help="also make destructive changes (deletions, shorter retention, removed grants)")
    p.add_argument("--auto-approve", action="store_true", help="do not ask for confirmation")
    p.add_argument("--throttle", default="50MiB/s", metavar="RATE",
                   help="replication throttle while replicas move (default 50MiB/s)")
    p.set_defaults(handler=cmd_apply)

    p = sub.add_parser("import", help="write specs describing an existing cluster, so that plan on them is empty")
    p.add_argument("out_dir", type=Path, metavar="OUT_DIR")
    p.add_argument("--command-config", required=True, type=Path, metavar="FILE", help=COMMAND_CONFIG_HELP)
    p.add_argument("--name", default="imported", help="cluster name for cluster.yaml (default: imported)")
    p.add_argument("--force", action="store_true", help="write into a non-empty OUT_DIR")
    p.set_defaults(handler=cmd_import)


def _planned(connection: Connection, specs: SpecSet) -> LivePlan:
    """The live plan; what was read and what it cost go to stderr, so stdout stays the plan (a PR comment,
    JSON)."""
    started = time.monotonic()
    live = plan_cluster(connection, specs)
    state, requests = live.observation.state, live.observation.requests
    print(f"observed {len(state.topics)} topics, {len(state.acls)} ACL bindings, {len(state.quotas)} quota "
          f"entities, {len(state.users)} users with {requests.total()} Admin requests ({requests}) "
          f"in {time.monotonic() - started:.2f} s", file=sys.stderr)
    return live


def cmd_plan(args: argparse.Namespace) -> int:
    specs = load_specs(args.specs_dir)
    live = _planned(read_connection(args.command_config), specs)
    sys.stdout.write(RENDERERS[args.format](live.plan))
    return 0 if live.plan.empty else 2


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cmd_apply(args: argparse.Namespace) -> int:
    specs = load_specs(args.specs_dir)
    try:
        throttle = int(parse_rate(args.throttle))
    except ValueError as exc:
        raise UsageError(f"--throttle {args.throttle!r}: {exc}") from None
    connection = read_connection(args.command_config)
    live = _planned(connection, specs)
    sys.stdout.write(render_text(live.plan))
    if live.plan.empty:
        return 0
    if not args.auto_approve:
        if not sys.stdin.isatty():
            raise UsageError("apply needs confirmation: run it in a terminal, or pass --auto-approve")
        if input(f"Apply {summary(live.plan)}? [y/N] ").strip().lower() not in ("y", "yes"):
            print("Nothing applied.")
            return 1
    options = ApplyOptions(allow_destructive=args.allow_destructive, throttle_bytes_per_s=throttle)
    after = apply_cluster(connection, specs, live, options, _progress)
    node_work = after.plan.node_work
    if not node_work:
        print(f"Applied {summary(live.plan)}; the cluster now matches the specs.")
        return 0
    applied = live.plan.without_node_work()
    print((f"Applied {summary(applied)}. " if applied.changes else "") +
          f"The cluster's nodes still differ from the specs: {len(node_work)} change(s) of node work, which "
          f"kraftform cannot do through the Admin protocol (--command-config):")
    for change in node_work:
        print(f"  {change.action} {change.kind} {change.resource} {change.key}: {change.current} -> {change.desired}")
    return 2


def cmd_import(args: argparse.Namespace) -> int:
    from kraftform.kafka.observe import observe
    from kraftform.plan.export import password_env, render_specs

    out: Path = args.out_dir
    if out.exists() and any(out.iterdir()) and not args.force:
        raise UsageError(f"{out} is not empty; choose an empty directory or pass --force")
    connection = read_connection(args.command_config)
    state = observe(connection).state
    files = render_specs(state, args.name, connection.username or Security().admin_user)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
    print(f"wrote {', '.join(files)} to {out}")
    users = sorted(state.users)
    if users:
        print(f"users' passwords are read from environment variables at apply time, e.g. {password_env(users[0])}")
    return 0
