"""`kraftform groups reset`: a declared consumer group's committed offsets moved as a reviewed change."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kraftform.cli.reconcile_commands import COMMAND_CONFIG_HELP, STATE_DIR_HELP, reviewed_move
from kraftform.cli.spec_commands import DEFAULT_SPECS
from kraftform.declared import load_specs
from kraftform.errors import UsageError
from kraftform.plan.changes import GroupOffset
from kraftform.plan.render import RENDERERS, summary

TO_HELP = ("earliest, latest, an ISO 8601 time with its zone (2026-11-24T09:30:00Z: the first record at or after "
           "it), or topic:partition=offset[,...]")


def register(sub: Any) -> None:
    groups = sub.add_parser("groups", help="a declared consumer group's committed offsets")
    gs = groups.add_subparsers(dest="groups_command", required=True, parser_class=type(groups))
    p = gs.add_parser("reset", help="move a declared consumer group's committed offsets: plan (exit 2 when they "
                                    "would move) or apply",
                      description="Per partition: the committed offset, where it goes, and the records the group "
                                  "then skips (destructive: --allow-destructive) or reads again. Refused while the "
                                  "group has active members.")
    p.add_argument("group", metavar="GROUP")
    p.add_argument("specs_dir", nargs="?", default=DEFAULT_SPECS, metavar="SPECS_DIR")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--command-config", type=Path, metavar="FILE", help=COMMAND_CONFIG_HELP)
    target.add_argument("--state-dir", type=Path, metavar="DIR", help=STATE_DIR_HELP)
    p.add_argument("--to", required=True, metavar="WHERE", help=TO_HELP)
    p.add_argument("--topic", action="append", default=[], metavar="TOPIC",
                   help="every partition of this topic (repeatable; default: the partitions the group has offsets on)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--plan", action="store_true", help="show the moves and exit 2 if any (the default)")
    mode.add_argument("--apply", action="store_true", help="make the moves")
    p.add_argument("--allow-destructive", action="store_true", help="also skip records the group has not read")
    p.add_argument("--format", choices=tuple(RENDERERS), default="text")
    p.set_defaults(handler=cmd_reset)


def cmd_reset(args: argparse.Namespace) -> int:
    from kraftform.cluster.connection import read_connection
    from kraftform.kafka.offsets import move_offsets, read_group
    from kraftform.plan.offsets import group_is_declared, parse_reset_to, reset_plan
    from kraftform.runtime.nodes.deployment import admin_config

    specs = load_specs(args.specs_dir)
    if not group_is_declared(specs, args.group):
        raise UsageError(f"group {args.group!r} is not declared: no ACL in {args.specs_dir} grants a group of that "
                         f"name or a prefix of it")
    if any(g.name == args.group and g.type == "share" for g in specs.groups):
        raise UsageError(f"group {args.group!r} is declared a share group: its start offsets move with Kafka's "
                         f"AlterShareGroupOffsets, which `groups reset` does not send (kafka-share-groups.sh "
                         f"--reset-offsets does)")
    to = parse_reset_to(args.to)
    connection = read_connection(args.command_config) if args.command_config else admin_config(args.state_dir)
    view = read_group(connection, args.group, to, args.topic)
    plan = reset_plan(args.group, view.current, view.targets, view.ends, view.members)
    done = reviewed_move(plan, args, "skip records the group has not read")
    if done is not None:
        return done
    move_offsets(connection, args.group, [c.payload for c in plan.changes if isinstance(c.payload, GroupOffset)])
    print(f"Moved the offsets of group {args.group}: {summary(plan)}", file=sys.stderr)
    return 0
