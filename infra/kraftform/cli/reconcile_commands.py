"""`kraftform plan`, `apply` and `import`: the specs against a live cluster."""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import os
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from kraftform.cli.spec_commands import DEFAULT_SPECS
from kraftform.cluster.connection import Connection, read_connection
from kraftform.declared import consumer_gate, load_specs
from kraftform.errors import ClusterUnhealthy, PlanRefusedError, UsageError
from kraftform.kafka.apply import ApplyOptions, check_applicable
from kraftform.kafka.reconcile import LivePlan, apply_cluster, plan_cluster
from kraftform.plan.changes import Change, Kind, Plan, Safety
from kraftform.plan.nodes import Step, unprotected_note
from kraftform.plan.render import RENDERERS, render_text, summary
from kraftform.specset.model import ClusterSpec, Security, SpecSet, named_groups
from kraftform.units import parse_rate

if TYPE_CHECKING:  # the runtimes (Docker, certificates) load only for a --state-dir plan or apply
    from kraftform.registry.rest import RegistryRest
    from kraftform.runtime.nodes.rolling import ClusterWork, Nodes

COMMAND_CONFIG_HELP = ("client properties of an admin (super) user: the admin.properties written by "
                       "`kraftform cluster up`, or the file you give Kafka's tools as --command-config")
STATE_DIR_HELP = ("the state directory of a cluster `kraftform cluster up` started: its nodes are planned and "
                  "changed too (settings read at start, heaps, Kafka version, brokers added or removed)")


def _target_options(p: Any) -> None:
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--command-config", type=Path, metavar="FILE", help=COMMAND_CONFIG_HELP)
    target.add_argument("--state-dir", type=Path, metavar="DIR", help=STATE_DIR_HELP)


def register(sub: Any) -> None:
    p = sub.add_parser("plan", help="compare the specs with a live cluster; exit 2 when changes are needed")
    p.add_argument("specs_dir", nargs="?", default=DEFAULT_SPECS, metavar="SPECS_DIR")
    _target_options(p)
    p.add_argument("--format", choices=tuple(RENDERERS), default="text")
    p.set_defaults(handler=cmd_plan)

    p = sub.add_parser("apply", help="make a live cluster match the specs, then check that it does")
    p.add_argument("specs_dir", nargs="?", default=DEFAULT_SPECS, metavar="SPECS_DIR")
    _target_options(p)
    p.add_argument("--allow-destructive", action="store_true",
                   help="also make destructive changes (deletions, shorter retention, removed grants, removed "
                        "brokers and their data)")
    p.add_argument("--node-timeout", type=float, default=300.0, metavar="SECONDS",
                   help="how long a restarted or added node may take to be back, the cluster whole (default 300)")
    p.add_argument("--stop-timeout", type=float, default=300.0, metavar="SECONDS",
                   help="how long a node waits until it may stop: no partition it is in the ISR of at "
                        "min.insync.replicas, the other voters a caught-up majority (default 300)")
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


def _planned(connection: Connection, specs: SpecSet, state_dir: Path | None = None) -> LivePlan:
    """The live plan, never changing the logins of Connect workers running beside a `state_dir` cluster; what was
    read and what it cost go to stderr, so stdout stays the plan (a PR comment, JSON)."""
    started = time.monotonic()
    # kafka-python (0.2 s of imports, for quotas and feature levels) loads while the first requests are in flight.
    threading.Thread(target=importlib.import_module, args=("kraftform.kafka.kafka_python",), daemon=True).start()
    logins = None
    if state_dir is not None:
        from kraftform.runtime.connect.clusters import workers_logins

        logins = workers_logins(state_dir)
    live = plan_cluster(connection, specs, logins=logins)
    state, requests = live.observation.state, live.observation.requests
    print(f"observed {len(state.topics)} topics, {len(state.acls)} ACL bindings, {len(state.quotas)} quota "
          f"entities, {len(state.users)} users with {requests.total()} Admin requests ({requests}) "
          f"in {time.monotonic() - started:.2f} s", file=sys.stderr)
    return live


@dataclass(frozen=True)
class Target:
    """What plan and apply work on: the admin login, the live plan, and with a state directory the runtime
    that runs the nodes and the node work it found (in `plan`, in place of what the Admin protocol sees)."""

    connection: Connection
    live: LivePlan
    plan: Plan
    runtime: Nodes | None = None
    work: ClusterWork | None = None
    #: The schema registry the specs' subjects go to (None: the specs declare none, or it cannot be reached here).
    registry: RegistryRest | None = None

    @property
    def subjects(self) -> list[Change]:
        return [c for c in self.plan.changes if c.kind is Kind.SUBJECT]


def unobservable(cluster: ClusterSpec) -> str:
    """What the Admin protocol cannot show of the cluster section, said in the plan when only --command-config is
    given: the controllers' settings and per-node ones are in the nodes' files."""
    fields = [name for name, value in (("controller_config", cluster.controller_config),
                                       ("node_config", cluster.node_config)) if value]
    if not fields:
        return ""
    return (f"{' and '.join(fields)} cannot be compared or applied through the Admin protocol: they are rendered "
            f"into the nodes' server.properties where kraftform runs them (--state-dir, `pulumi up`)")


def _as_started(specs: SpecSet, args: argparse.Namespace) -> SpecSet:
    """With --state-dir, the cluster section as its nodes were started (`deployment.as_started`)."""
    if args.state_dir is None:
        return specs
    from kraftform.runtime.nodes.deployment import as_started

    return dataclasses.replace(specs, cluster=as_started(specs.cluster, args.state_dir))


def _throttle(args: argparse.Namespace) -> int:
    """apply's --throttle (plan has none: the moves' time is shown at apply's default)."""
    given = getattr(args, "throttle", "50MiB/s")
    try:
        return int(parse_rate(given))
    except ValueError as exc:
        raise UsageError(f"--throttle {given!r}: {exc}") from None


def _with_subjects(target: Target, specs: SpecSet, state_dir: Path | None) -> Target:
    """The target with the subjects' changes in its plan, when the specs declare a registry (`registry_client`
    refuses, before anything is read, a registry it cannot find: the one kraftform runs needs --state-dir; a plan
    without the schemas would say "no changes" about them untruly)."""
    if specs.registry is None:
        return target
    from kraftform.plan.live import ownership_of
    from kraftform.registry.reconcile import plan_subjects
    from kraftform.runtime.registry.running import registry_client

    rest = registry_client(specs, state_dir)
    subjects = plan_subjects(rest, specs.subjects, ownership_of(specs).topic, consumer_gate(specs))
    plan = dataclasses.replace(target.plan, changes=tuple(sorted([*target.plan.changes, *subjects],
                                                                 key=Change.sort_key)))
    return dataclasses.replace(target, plan=plan, registry=rest)


def _target(args: argparse.Namespace, specs: SpecSet) -> Target:
    if args.state_dir is None:
        if specs.registry is not None and not specs.registry.external:
            raise UsageError(f"{specs.registry.location}: the specs' schema registry is the one kraftform runs beside "
                             f"a cluster it made, found through --state-dir; for a cluster kraftform did not make, "
                             f"give `registry.url`. Nothing was read or applied")
        connection = read_connection(args.command_config)
        live = _planned(connection, specs)
        unseen = unobservable(specs.cluster)
        plan = dataclasses.replace(live.plan, notes=(*live.plan.notes, unseen)) if unseen else live.plan
        return _with_subjects(Target(connection, live, plan), specs, None)
    from kraftform.runtime import runtime_of
    from kraftform.runtime.nodes.deployment import admin_config
    from kraftform.runtime.nodes.rolling import cluster_work

    connection, runtime = admin_config(args.state_dir), cast("Nodes", runtime_of(args.state_dir))
    live = _planned(connection, specs, args.state_dir)
    work = cluster_work(runtime, specs.cluster, connection, _throttle(args))
    plan = live.plan.with_node_work(work.changes(specs.cluster))
    rolls_brokers = any(s.step is Step.RESTART and s.node.is_broker for s in work.steps)
    unsafe = unprotected_note(live.observation.state) if rolls_brokers else ""
    plan = dataclasses.replace(plan, notes=(*plan.notes, unsafe)) if unsafe else plan
    return _with_subjects(Target(connection, live, plan, runtime, work), specs, args.state_dir)


def cmd_plan(args: argparse.Namespace) -> int:
    started = time.monotonic()
    specs = _as_started(load_specs(args.specs_dir), args)
    loaded = time.monotonic()
    plan = _target(args, specs).plan
    planned = time.monotonic()
    sys.stdout.write(RENDERERS[args.format](plan))
    if os.environ.get("KRAFTFORM_TIMINGS"):  # tests/bench/bench_plan.py reads these phases
        print(f"timings: specs {loaded - started:.3f} s, cluster and plan {planned - loaded:.3f} s, render "
              f"{time.monotonic() - planned:.3f} s", file=sys.stderr)
    return 0 if plan.empty else 2


def confirmed(plan: Plan, auto_approve: bool) -> bool:
    """Whether to apply: --auto-approve, or a yes typed in a terminal (without one, a usage error)."""
    if auto_approve:
        return True
    if not sys.stdin.isatty():
        raise UsageError("apply needs confirmation: run it in a terminal, or pass --auto-approve")
    if input(f"Apply {summary(plan)}? [y/N] ").strip().lower() in ("y", "yes"):
        return True
    print("Nothing applied.")
    return False


def reviewed_move(plan: Plan, args: argparse.Namespace, skipping: str) -> int | None:
    """An offsets move (`groups reset`, `connect offsets`) printed in `--format`; the exit code when there is
    nothing to move or only a plan was asked (2: a move is planned), None to go ahead. Refused changes, problems
    and, without --allow-destructive, partitions that would `skipping` stop it before anything is sent."""
    sys.stdout.write(RENDERERS[args.format](plan))
    if not args.apply:
        return 0 if plan.empty else 2
    if plan.refused or plan.problems:
        raise PlanRefusedError("the move has refused changes or problems (above); nothing was moved")
    destructive = plan.by_safety(Safety.DESTRUCTIVE)
    if destructive and not args.allow_destructive:
        raise PlanRefusedError(f"{len(destructive)} partition(s) would {skipping}: --allow-destructive; nothing "
                               f"was moved")
    return 0 if plan.empty else None


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cmd_apply(args: argparse.Namespace) -> int:
    started = time.monotonic()
    specs = _as_started(load_specs(args.specs_dir), args)
    if os.environ.get("KRAFTFORM_TIMINGS"):
        print(f"timings: specs {time.monotonic() - started:.3f} s", file=sys.stderr)
    throttle = _throttle(args)
    target = _target(args, specs)
    plan = target.plan
    sys.stdout.write(render_text(plan))
    if plan.empty:
        return 0
    options = ApplyOptions(allow_destructive=args.allow_destructive, throttle_bytes_per_s=throttle)
    if target.subjects:
        from kraftform.registry.reconcile import check_subjects

        check_subjects(target.subjects, args.allow_destructive)
    if target.work is not None:  # node work comes first: everything must be allowed before it starts
        destructive = [c for c in plan.node_work if c.safety is Safety.DESTRUCTIVE]
        if destructive and not args.allow_destructive:
            raise PlanRefusedError(f"{len(destructive)} destructive change(s) to the cluster's nodes need "
                                   f"--allow-destructive; nothing was applied:\n" + "\n".join(
                                       f"  {c.action} {c.resource}: {c.reason}" for c in destructive))
        check_applicable(plan, specs.users, target.live.passwords, options)  # node work's refusals too
    if not confirmed(plan, args.auto_approve):
        return 1
    if target.runtime is not None and target.work is not None:
        waiting = _apply_with_nodes(args, specs, target, options)
        _apply_subjects(specs, target, args.allow_destructive)
        if waiting:
            print(f"Applied {summary(target.plan.without_node_work())}; {waiting}")
            return 2
        print(f"Applied {summary(target.plan)}; the cluster now matches the specs.")
        return 0
    after = apply_cluster(target.connection, specs, target.live, options, _progress)
    _apply_subjects(specs, target, args.allow_destructive)
    node_work = after.plan.node_work
    unseen = unobservable(specs.cluster)
    if unseen:
        print(f"Applied {summary(plan)}. {unseen[0].upper()}{unseen[1:]}.")
        return 2
    if not node_work:
        print(f"Applied {summary(plan)}; the cluster now matches the specs.")
        return 0
    applied = plan.without_node_work()
    print((f"Applied {summary(applied)}. " if applied.changes else "") +
          f"The cluster's nodes still differ from the specs: {len(node_work)} change(s) of node work, which "
          f"kraftform cannot do through the Admin protocol (--command-config); `--state-dir` does it for a "
          f"cluster `kraftform cluster up` started:")
    for change in node_work:
        print(f"  {change.action} {change.kind} {change.resource} {change.key}: {change.current} -> {change.desired}")
    return 2


def _apply_with_nodes(args: argparse.Namespace, specs: SpecSet, target: Target, options: ApplyOptions) -> str:
    """Node work first (new brokers, the roll, partition moves, removals), then what the Admin protocol does,
    planned again against the reshaped cluster; then nothing may be left. While a host does not answer, no node
    work is done and the rest is: returns what waits ("" when nothing does)."""
    from kraftform.runtime.nodes.deployment import admin_config
    from kraftform.runtime.nodes.docker_engine import DockerRuntime
    from kraftform.runtime.nodes.rolling import RollOptions, carry_out, cluster_work, waiting_text

    assert target.runtime is not None and target.work is not None
    if target.work.lost_hosts:
        _progress(f"{waiting_text(target.work)}; applying the rest")
    elif target.work.to_do:
        carry_out(target.runtime, specs.cluster, target.work, target.connection,
                  RollOptions(node_timeout_s=args.node_timeout, gate_timeout_s=args.stop_timeout,
                              throttle_bytes_per_s=options.throttle_bytes_per_s,
                              purge_removed=args.allow_destructive), _progress)
    connection = admin_config(args.state_dir)  # the client files list the brokers that run now
    live = _planned(connection, specs, args.state_dir)
    if not live.plan.without_node_work().empty:
        apply_cluster(connection, specs, live, options, _progress)
    left = cluster_work(target.runtime, specs.cluster, connection)
    if isinstance(target.runtime, DockerRuntime):
        target.runtime.record_endpoints()
    if left.lost_hosts:
        return waiting_text(left)
    if left.to_do or left.refused:
        raise ClusterUnhealthy("the cluster's nodes still differ from the specs after apply:\n" +
                               render_text(Plan.of(left.changes(specs.cluster))))
    return ""


def _apply_subjects(specs: SpecSet, target: Target, allow_destructive: bool) -> None:
    """The subjects' changes, once the topics are there; then the registry read again: nothing may be left."""
    if target.registry is None or not target.subjects:
        return
    from kraftform.plan.live import ownership_of
    from kraftform.registry.reconcile import apply_subjects, plan_subjects

    apply_subjects(target.registry, target.subjects, allow_destructive, _progress)
    left = plan_subjects(target.registry, specs.subjects, ownership_of(specs).topic, consumer_gate(specs))
    if left:
        raise ClusterUnhealthy("the schema registry still differs from the specs after apply:\n" +
                               render_text(Plan.of(left)))


def cmd_import(args: argparse.Namespace) -> int:
    from kraftform.kafka.admin import Admin
    from kraftform.kafka.observe import group_configs, observe
    from kraftform.plan.export import password_env, render_specs

    out: Path = args.out_dir
    if out.exists() and any(out.iterdir()) and not args.force:
        raise UsageError(f"{out} is not empty; choose an empty directory or pass --force")
    connection = read_connection(args.command_config)
    admin = Admin(connection)
    state = observe(connection, admin=admin).state
    # The settings of the groups the ACLs name (Kafka 4.3 has no request listing every group with settings
    # that kraftform sends: a group no ACL names keeps its settings, unmanaged).
    state = dataclasses.replace(state, group_configs=group_configs(admin, named_groups(state.acls)))
    files = render_specs(state, args.name, connection.username or Security().admin_user)
    out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
    print(f"wrote {', '.join(files)} to {out}")
    users = sorted(state.users)
    if users:
        print(f"users' passwords are read from environment variables at apply time, e.g. {password_env(users[0])}")
    return 0
