"""`kraftform connect up|down|plan|apply|status`: the specs' Kafka Connect clusters beside a cluster kraftform runs.

The Connect clusters' internal topics and their workers' grants are Kafka objects: `kraftform plan` and `apply`
make them with everything else, and `connect up` refuses to start workers before they exist. Connectors go
through the workers' REST API: planned here, validated by their own plugins, applied, and watched until they run.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kraftform.cli.reconcile_commands import confirmed, reviewed_move
from kraftform.cli.spec_commands import DEFAULT_SPECS
from kraftform.connect.reconcile import STABLE_FOR_S
from kraftform.declared import load_specs
from kraftform.errors import PlanRefusedError, UsageError
from kraftform.plan.changes import Plan, Safety
from kraftform.plan.render import RENDERERS, render_text, summary
from kraftform.specset.model import ConnectSpec, SpecSet

if TYPE_CHECKING:
    from kraftform.connect.rest import ConnectRest
    from kraftform.runtime.connect.jvm_workers import ConnectWorkers

STATE_HELP = ("the state directory of a cluster `kraftform cluster up` started (the workers run beside it: JVMs "
              "beside a local cluster, containers beside a Docker one)")


def register(sub: Any) -> None:
    connect = sub.add_parser("connect", help="the specs' Kafka Connect clusters and their connectors")
    cs = connect.add_subparsers(dest="connect_command", required=True, parser_class=type(connect))

    def command(name: str, help_text: str, handler: Any, *leading: str) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = cs.add_parser(name, help=help_text, description=help_text)
        for positional in leading:
            p.add_argument(positional.lower(), metavar=positional)
        p.add_argument("specs_dir", nargs="?", default=DEFAULT_SPECS, metavar="SPECS_DIR")
        p.add_argument("--state-dir", type=Path, required=True, metavar="DIR", help=STATE_HELP)
        p.add_argument("--name", metavar="CONNECT", help="only this Connect cluster (default: every one declared)")
        p.set_defaults(handler=handler)
        return p

    command("up", "start the workers (those whose configuration changed restart, one at a time); returns when "
                  "each serves its REST API", cmd_up)
    down = command("down", "stop the workers", cmd_down)
    down.add_argument("--purge", action="store_true", help="also remove their files (certificates, passwords)")
    plan = command("plan", "connectors against what the workers run, each new or changed config validated by its "
                           "plugin: exit 0 no changes, 2 changes, 1 a config the plugin refuses", cmd_plan)
    plan.add_argument("--format", choices=tuple(RENDERERS), default="text")
    apply = command("apply", "make the connectors as declared, then wait until they and their tasks run (or are "
                             "paused or stopped as declared)", cmd_apply)
    apply.add_argument("--auto-approve", action="store_true", help="apply without asking")
    apply.add_argument("--allow-destructive", action="store_true",
                       help="also delete connectors no longer declared and change a connector's class or topics")
    apply.add_argument("--stable-for", type=float, default=STABLE_FOR_S, metavar="S",
                       help=f"how long every connector and task must run as declared before apply says so "
                            f"(default {STABLE_FOR_S:.0f}: a task reports running before it fails on a refusal, "
                            f"5-6 s after its start here)")
    command("status", "each connector's and task's state against the declared one: exit 2 when one differs",
            cmd_status)
    offsets = command("offsets", "a connector's offsets per source partition (KIP-875); with --reset or --set, "
                                 "the move planned (exit 2 when any) or, with --apply, made: the connector must be "
                                 "stopped (`state: stopped`)", cmd_offsets, "CONNECTOR")
    target = offsets.add_mutually_exclusive_group()
    target.add_argument("--reset", action="store_true", help="every partition back to no offset (destructive)")
    target.add_argument("--set", type=Path, metavar="FILE",
                        help="the offsets in this JSON or YAML file, shaped as `--format json` prints them (an "
                             "offset null resets its partition)")
    offsets.add_argument("--apply", action="store_true", help="make the move")
    offsets.add_argument("--allow-destructive", action="store_true",
                         help="also reset, or move forward (skipping data), or move an offset kraftform cannot order")
    offsets.add_argument("--format", choices=tuple(RENDERERS), default="text")


def _chosen(specs: SpecSet, name: str | None) -> list[ConnectSpec]:
    if not specs.connect:
        raise UsageError("the specs declare no Connect cluster (a `connect:` section)")
    if name is None:
        return list(specs.connect)
    found = [c for c in specs.connect if c.name == name]
    if not found:
        raise UsageError(f"no Connect cluster {name!r} in the specs (declared: "
                         f"{', '.join(c.name for c in specs.connect)})")
    return found


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cmd_up(args: argparse.Namespace) -> int:
    from kraftform.runtime.connect.clusters import start_declared
    from kraftform.runtime.nodes.deployment import load

    specs = load_specs(args.specs_dir)
    load(args.state_dir)  # a cluster is there
    for spec in _chosen(specs, args.name):
        records = start_declared(args.state_dir, specs, spec, os.environ, _progress)
        print(f"{spec.name}: {len(records)} worker(s): " + ", ".join(f"https://{r.host}:{r.port}" for r in records))
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    from kraftform.runtime.connect.clusters import connect_workers, stop_undeclared

    specs = load_specs(args.specs_dir)
    undeclared = args.name is not None and args.name not in {c.name for c in specs.connect}
    # No longer declared, its workers may still run (and its user be one a plan refuses to change).
    if undeclared and (args.state_dir / "connect" / args.name).is_dir():
        stopped = stop_undeclared(args.state_dir, args.name)
        print(f"{args.name}: {stopped} worker(s) stopped (no longer declared)")
        return 0
    for spec in _chosen(specs, args.name):
        connect_workers(args.state_dir, spec).down(purge=args.purge)
        print(f"{spec.name}: stopped" + (" and removed" if args.purge else ""))
    return 0


Planned = list[tuple["ConnectWorkers", "ConnectRest", Plan]]


def _plans(args: argparse.Namespace) -> tuple[dict[str, str | None], Planned]:
    """The declared users' passwords (None where not set), and each chosen Connect cluster's workers, REST client
    and plan."""
    from kraftform.connect.reconcile import plan_connect
    from kraftform.kafka.credentials import passwords
    from kraftform.kafka.observe import acl_bindings
    from kraftform.runtime.connect.clusters import connect_workers
    from kraftform.runtime.nodes.deployment import admin_config

    specs = load_specs(args.specs_dir)
    granted = acl_bindings(admin_config(args.state_dir))
    found = passwords(specs.users)
    out = []
    for spec in _chosen(specs, args.name):
        workers = connect_workers(args.state_dir, spec)
        rest = workers.rest()
        out.append((workers, rest, plan_connect(rest, spec, granted, workers.logins(found),
                                                workers.started_environment())))
    return found, out


def _joined(plans: Planned) -> Plan:
    return Plan(Plan.of([c for _, _, p in plans for c in p.changes]).changes,
                problems=tuple(p for _, _, plan in plans for p in plan.problems))


def cmd_plan(args: argparse.Namespace) -> int:
    plan = _joined(_plans(args)[1])
    sys.stdout.write(RENDERERS[args.format](plan))
    if plan.problems:
        return 1
    return 0 if plan.empty else 2


def cmd_apply(args: argparse.Namespace) -> int:
    from kraftform.connect.reconcile import apply_connect

    found, plans = _plans(args)
    plan = _joined(plans)
    sys.stdout.write(render_text(plan))
    if plan.problems:
        raise PlanRefusedError("the plan has problems (above); nothing was applied")
    if plan.empty:
        return 0
    destructive = plan.by_safety(Safety.DESTRUCTIVE)
    if destructive and not args.allow_destructive:
        raise PlanRefusedError(f"{len(destructive)} destructive change(s) need --allow-destructive; nothing was "
                               f"applied")
    if not confirmed(plan, args.auto_approve):
        return 1
    for workers, rest, one in plans:
        workers.write_logins(found)
        apply_connect(rest, workers.spec, one, _progress, stable_s=args.stable_for)
        workers.mark_logins_applied()
    print(f"Applied {summary(plan)}; the connectors are as declared.")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from kraftform.monitoring.status import assess_connect
    from kraftform.runtime.connect.clusters import observe

    differ = False
    for spec in _chosen(load_specs(args.specs_dir), args.name):
        seen = observe(args.state_dir, spec)
        statuses, problems = assess_connect(seen)
        differ |= bool(problems)
        print(f"{spec.name}: {seen.workers_running} of {spec.workers} worker(s) running")
        for k in statuses:
            print(f"  {'ok  ' if k.as_declared else 'DIFF'} {k.line()}")
        for problem in problems:
            print(f"  PROBLEM: {problem}")
    return 2 if differ else 0


def cmd_offsets(args: argparse.Namespace) -> int:
    import json

    import yaml

    from kraftform.connect.reconcile import move_offsets
    from kraftform.plan.connector_offsets import offsets_plan, parse_offsets_file
    from kraftform.runtime.connect.clusters import connect_workers

    specs = load_specs(args.specs_dir)
    found = [(spec, c) for spec in _chosen(specs, args.name) for c in spec.connectors if c.name == args.connector]
    if not found:
        raise UsageError(f"no connector {args.connector!r} is declared in {args.specs_dir}")
    spec, connector = found[0]
    rest = connect_workers(args.state_dir, spec).rest()
    live = rest.connectors().get(connector.name)
    if live is None:
        raise UsageError(f"connector {connector.name!r} is declared but not running in {spec.name!r} yet: "
                         f"`kraftform connect apply` creates it")
    current = rest.offsets(connector.name)
    if not args.reset and args.set is None:
        if args.format == "json":
            print(json.dumps({"offsets": [{"partition": json.loads(p), "offset": json.loads(o)}
                                          for p, o in sorted(current.items())]}, indent=2))
        else:
            print(f"{spec.name}/{connector.name} ({live.state}): {len(current)} partition(s)")
            for partition, offset in sorted(current.items()):
                print(f"  {partition}  {offset}")
        return 0
    if args.reset:
        target: dict[str, str | None] = dict.fromkeys(current)
    else:
        try:
            data = yaml.safe_load(args.set.read_text())
        except (OSError, yaml.YAMLError) as exc:
            raise UsageError(f"{args.set}: cannot be read as JSON or YAML: {exc}") from None
        target = parse_offsets_file(str(args.set), data)
    plan = offsets_plan(spec.name, connector, live.state, current, target)
    done = reviewed_move(plan, args, "be reset or skip data")
    if done is not None:
        return done
    move_offsets(rest, connector.name, plan)
    print(f"Moved the offsets of connector {connector.name}: {summary(plan)}", file=sys.stderr)
    return 0
