"""`kraftform status` and `kraftform monitoring rules|dashboard|targets|up|down|exporter`."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

from kraftform.cli.cluster_commands import DEFAULT_STATE, STATE_HELP
from kraftform.cli.consumer_commands import DEFAULT_DATA
from kraftform.cli.spec_commands import DEFAULT_SPECS
from kraftform.cluster.connection import Connection
from kraftform.declared import load_specs

DEFAULT_MONITORING = ".state/monitoring"


def _where(p: argparse.ArgumentParser) -> None:
    p.add_argument("specs_dir", nargs="?", default=DEFAULT_SPECS, metavar="SPECS_DIR")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--command-config", type=Path, metavar="FILE",
                       help="an admin client config of a cluster (any cluster, kraftform's or not)")
    where.add_argument("--state-dir", type=Path, default=Path(DEFAULT_STATE), metavar="DIR", help=STATE_HELP)
    p.add_argument("--data-dir", type=Path, default=Path(DEFAULT_DATA),
                   help=f"where the Spark consumers' checkpoints are (default {DEFAULT_DATA})")


def register(sub: Any) -> None:
    p = sub.add_parser("status", help="the cluster and its consumers against the specs: exit 0 healthy, 2 not",
                       description="Every declared broker registered, one active controller, voters caught up, "
                                   "each declared topic's under-replicated, under-min-ISR and offline partitions, "
                                   "and the lag of each declared consumer (Spark consumers from their checkpoints, "
                                   "consumer groups from their committed offsets). Exit 0 healthy, 2 not, 1 error "
                                   "(unreachable, refused login).")
    _where(p)
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--watch", type=float, default=None, metavar="N", help="look again every N seconds (Ctrl-C)")
    p.set_defaults(handler=cmd_status)

    mon = sub.add_parser("monitoring", help="Prometheus alert rules, a Grafana dashboard and Prometheus itself")
    ms = mon.add_subparsers(dest="monitoring_command", required=True, parser_class=type(mon))
    p = ms.add_parser("rules", help="Prometheus alert rules generated from the specs (YAML on stdout)")
    p.add_argument("specs_dir", nargs="?", default=DEFAULT_SPECS, metavar="SPECS_DIR")
    p.set_defaults(handler=cmd_rules)
    p = ms.add_parser("dashboard", help="a Grafana dashboard of the course's metrics (JSON on stdout)")
    p.add_argument("specs_dir", nargs="?", default=DEFAULT_SPECS, metavar="SPECS_DIR")
    p.set_defaults(handler=cmd_dashboard)
    p = ms.add_parser("up", help="run Prometheus (and kraftform's lag exporter) beside a cluster from `cluster up`")
    p.add_argument("specs_dir", nargs="?", default=DEFAULT_SPECS, metavar="SPECS_DIR")
    p.add_argument("--state-dir", type=Path, default=Path(DEFAULT_STATE), metavar="DIR", help=STATE_HELP)
    p.add_argument("--data-dir", type=Path, default=Path(DEFAULT_DATA),
                   help=f"where the Spark consumers' checkpoints are (default {DEFAULT_DATA})")
    p.add_argument("--scrape-interval", type=float, default=5.0, help="seconds between scrapes (default 5)")
    p.add_argument("--max-for", type=int, default=None, metavar="S",
                   help="cap every alert rule's `for:` at S seconds, to try the alerts without waiting their "
                        "production durations (default: each rule's own)")
    p.set_defaults(handler=cmd_up)
    p = ms.add_parser("down", help="stop the Prometheus and exporter `monitoring up` started")
    p.add_argument("--state-dir", type=Path, default=Path(DEFAULT_STATE), metavar="DIR", help=STATE_HELP)
    p.set_defaults(handler=cmd_down)
    p = ms.add_parser("exporter", help="serve kraftform's own metrics (consumer lag, certificate expiry, status) "
                                       "for Prometheus; `monitoring up` starts it")
    _where(p)
    p.add_argument("--listen", default="127.0.0.1:9405", metavar="HOST:PORT")
    p.set_defaults(handler=cmd_exporter)


def connection_of(args: argparse.Namespace) -> Connection:
    from kraftform.cluster.connection import read_connection
    from kraftform.runtime.nodes.deployment import admin_config

    return read_connection(args.command_config) if args.command_config else admin_config(args.state_dir)


def cmd_status(args: argparse.Namespace) -> int:
    from kraftform.monitoring.status import render_text
    from kraftform.runtime.nodes.status import status_of

    specs = load_specs(args.specs_dir)
    connection = connection_of(args)
    while True:
        status = status_of(specs, connection, args.data_dir.resolve(),
                           None if args.command_config else args.state_dir)
        if args.format == "json":
            print(json.dumps({**dataclasses.asdict(status), "healthy": status.healthy}, indent=2, default=str))
        else:
            print(render_text(status))
        sys.stdout.flush()
        if args.watch is None:
            return 0 if status.healthy else 2
        time.sleep(args.watch)
        print()


def cmd_rules(args: argparse.Namespace) -> int:
    from kraftform.monitoring.alerts import rules_yaml

    print(rules_yaml(load_specs(args.specs_dir)), end="")
    return 0


def cmd_dashboard(args: argparse.Namespace) -> int:
    from kraftform.monitoring.dashboard import dashboard

    print(json.dumps(dashboard(load_specs(args.specs_dir)), indent=2))
    return 0


def cmd_up(args: argparse.Namespace) -> int:
    from kraftform.runtime.observation.monitoring import monitoring_up

    running = monitoring_up(load_specs(args.specs_dir), Path(args.specs_dir), args.state_dir,
                            args.data_dir.resolve(), args.scrape_interval, args.max_for)
    print(f"Prometheus: {running.prometheus_url} (rules: {running.rules_file})")
    print(f"kraftform exporter: {running.exporter_url}")
    print(f"scrape targets: {running.targets_file}")
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    from kraftform.runtime.observation.monitoring import monitoring_down

    stopped = monitoring_down(args.state_dir)
    print(f"stopped: {', '.join(stopped) or 'nothing was running'}")
    return 0


def cmd_exporter(args: argparse.Namespace) -> int:
    from kraftform.runtime.observation.exporter import serve

    host, _, port = args.listen.rpartition(":")
    specs = load_specs(args.specs_dir)
    state_dir = None if args.command_config else args.state_dir
    serve(specs, connection_of(args), args.data_dir.resolve(), state_dir, host or "127.0.0.1", int(port))
    return 0
