"""Commands that need only spec files: validate, size, profile show, diff."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kraftform.declared import diff_specs, load_specs
from kraftform.errors import UsageError
from kraftform.lint import ENVS, RULES, lint
from kraftform.plan.render import RENDERERS
from kraftform.specset.model import Profile, SpecSet
from kraftform.specset.profiles import BUILTIN_PROFILES, SECTIONS
from kraftform.tables import text_table
from kraftform.units import human_bytes

if TYPE_CHECKING:  # sizing reads the consumers' Spark settings: loaded by `size` alone
    from kraftform.sizing import SizingReport

DEFAULT_SPECS = "specs"


def register(sub: Any) -> None:
    p = sub.add_parser("validate", help="check a spec directory; report every problem at once")
    p.add_argument("specs_dir", nargs="?", default=DEFAULT_SPECS, metavar="SPECS_DIR")
    p.set_defaults(handler=cmd_validate)

    p = sub.add_parser("size", help="brokers, controllers, storage and partitions the expected load needs")
    p.add_argument("specs_dir", nargs="?", default=DEFAULT_SPECS, metavar="SPECS_DIR")
    p.add_argument("--strict", action="store_true", help="exit 2 when the declared cluster is too small")
    p.set_defaults(handler=cmd_size)

    p = sub.add_parser("profile", help="profiles: durability, latency, throughput, balanced, and the specs' own")
    profile_sub = p.add_subparsers(dest="profile_command", required=True, parser_class=type(p))
    show = profile_sub.add_parser("show", help="the effective settings of a profile")
    show.add_argument("name")
    show.add_argument("specs_dir", nargs="?", default=None, metavar="SPECS_DIR",
                      help="include this spec directory's profile overrides (default: specs/ if present)")
    show.add_argument("--format", choices=("text", "json"), default="text")
    show.set_defaults(handler=cmd_profile_show)

    p = sub.add_parser("lint", help="organisation rules for an environment (the Pulumi policy pack's rules); "
                                    "exit 2 on findings")
    p.add_argument("specs_dir", nargs="?", default=DEFAULT_SPECS, metavar="SPECS_DIR")
    p.add_argument("--env", choices=ENVS, required=True)
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(handler=cmd_lint)

    p = sub.add_parser("diff", help="compare two spec revisions offline; exit 2 when anything changed")
    p.add_argument("base_dir", metavar="BASE_DIR")
    p.add_argument("head_dir", metavar="HEAD_DIR")
    p.add_argument("--format", choices=tuple(RENDERERS), default="text")
    p.set_defaults(handler=cmd_diff)


def cmd_lint(args: argparse.Namespace) -> int:
    findings = lint(load_specs(args.specs_dir), args.env)
    if args.format == "json":
        print(json.dumps([{"rule": f.rule, "file": f.problem.location.file, "line": f.problem.location.line,
                           "path": f.problem.location.path, "message": f.problem.message} for f in findings],
                         indent=2))
    else:
        for finding in findings:
            print(finding)
        rules = sum(1 for r in RULES if args.env in r.envs)
        print(f"{args.specs_dir}: {len(findings)} finding{'s' if len(findings) != 1 else ''} "
              f"({rules} rules for {args.env})")
    return 2 if findings else 0


def describe(specs: SpecSet, where: str) -> str:
    c = specs.cluster
    bindings = len(specs.acl_bindings())
    return (f"{where}: valid. Cluster {c.name!r} ({c.controllers} controllers, {c.brokers} brokers, "
            f"Kafka {c.kafka_version}); {len(specs.topics)} topics, {bindings} ACL bindings, "
            f"{len(specs.quotas)} quotas, {len(specs.users)} users, {len(specs.consumers)} consumers, "
            f"{len(specs.profiles)} profiles" + (
                f", {len(specs.connect)} Connect clusters ({sum(c.workers for c in specs.connect)} workers, "
                f"{sum(len(c.connectors) for c in specs.connect)} connectors)" if specs.connect else "") +
            (f", {len(specs.subjects)} schema subjects" if specs.registry is not None else "") +
            f", from {len(specs.files)} files")


def cmd_validate(args: argparse.Namespace) -> int:
    print(describe(load_specs(args.specs_dir), args.specs_dir))
    return 0


def render_sizing(r: SizingReport) -> str:
    from kraftform.sizing import HEADROOM

    def n(value: int | None) -> str:
        return "-" if value is None else str(value)

    rows = [("what", "needed", "declared", "why"),
            ("brokers (storage)", n(r.brokers_for_storage), str(r.declared_brokers),
             f"{human_bytes(r.storage_bytes)} replicated, disks at most {HEADROOM:.0%} full"
             if r.storage_bytes is not None else "no load declared"),
            ("brokers (network)", n(r.brokers_for_network), str(r.declared_brokers),
             f"peak writes x replication and consumer fan-out under {HEADROOM:.0%} of the links"),
            ("brokers (CPU)", n(r.brokers_for_cpu), str(r.declared_brokers),
             f"replicated writes under {HEADROOM:.0%} of a broker's capacity"),
            ("brokers (replication)", str(r.brokers_for_replication), str(r.declared_brokers),
             "one broker per replica of the most replicated topic"),
            ("brokers", str(r.brokers_needed), str(r.declared_brokers), "the largest of the above"),
            ("controllers", str(r.controllers_needed), str(r.declared_controllers),
             f"2f+1 tolerate f failures; {r.declared_controllers} tolerate {(r.declared_controllers - 1) // 2}")]
    topic_rows = [("topic", "partitions", "suggested", "RF", "min.insync", "write failures tolerated")]
    topic_rows += [(t.name, str(t.partitions), n(t.suggested_partitions), str(t.replication_factor),
                    str(t.min_insync_replicas), str(t.write_failures_tolerated)) for t in r.topics]
    out = [text_table(rows)]
    if r.topics:
        out += ["", text_table(topic_rows)]
    if r.consumers:
        consumer_rows = [("consumer", "cores", "input partitions", "tasks per micro-batch", "sink")]
        consumer_rows += [(c.name, str(c.cores), str(c.input_partitions), str(c.tasks),
                           "exactly-once" if c.exactly_once else "at-least-once") for c in r.consumers]
        out += ["", text_table(consumer_rows),
                f"consumers beside the brokers: {len(r.consumers)} container(s), {r.consumer_cores} cores in all "
                f"(each a Spark local master with its cores)"]
    if r.connect:
        connect_rows = [("Connect cluster", "workers", "heap each", "running tasks")]
        connect_rows += [(c.name, str(c.workers), human_bytes(c.heap_bytes), str(c.tasks)) for c in r.connect]
        out += ["", text_table(connect_rows),
                f"Connect workers beside the brokers: {sum(c.workers for c in r.connect)} JVM(s), "
                f"{human_bytes(sum(c.memory_bytes for c in r.connect))} of heap in all"]
    if r.hosts:
        host_rows = [("host", "nodes", "voters left", "majority", "fewest replicas left", "min.insync", "survives")]
        for loss in r.hosts:
            worst = min(loss.topics, key=lambda t: (t.replicas_left - t.min_insync, t.topic))
            host_rows.append((loss.host, str(len(loss.nodes)), f"{loss.voters - loss.voters_lost} of {loss.voters}",
                              str(loss.majority), f"{worst.replicas_left} of {worst.replication_factor} "
                              f"({worst.topic})", str(worst.min_insync), "yes" if loss.survived else "NO"))
        out += ["", text_table(host_rows), "each row: that host lost (engine, containers, link) and the rest up"]
    out += [""] + [f"warning: {w}" for w in r.warnings]
    if not r.warnings:
        out.append("The declared cluster is large enough for the declared load.")
    return "\n".join(out) + "\n"


def cmd_size(args: argparse.Namespace) -> int:
    from kraftform.sizing import size_cluster

    report = size_cluster(load_specs(args.specs_dir))
    print(render_sizing(report), end="")
    return 2 if args.strict and report.undersized else 0


def _profile_json(p: Profile) -> dict[str, Any]:
    return {"name": p.name, "description": p.description, "replication_factor": p.replication_factor,
            **{section: dict(sorted(getattr(p, section).items())) for section in SECTIONS}}


def cmd_profile_show(args: argparse.Namespace) -> int:
    specs_dir = args.specs_dir or (DEFAULT_SPECS if Path(DEFAULT_SPECS).is_dir() else None)
    profiles = load_specs(specs_dir).profiles if specs_dir else BUILTIN_PROFILES
    profile = profiles.get(args.name)
    if profile is None:
        raise UsageError(f"unknown profile {args.name!r} (known: {', '.join(sorted(profiles))})")
    if args.format == "json":
        print(json.dumps(_profile_json(profile), indent=2))
        return 0
    print(f"profile {profile.name}: {profile.description}")
    if profile.replication_factor:
        print(f"  replication_factor: {profile.replication_factor}")
    for section in SECTIONS:
        settings = getattr(profile, section)
        print(f"  {section}:" + ("" if settings else " (Kafka defaults)"))
        for key, value in sorted(settings.items()):
            print(f"    {key} = {value}")
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    base, head = load_specs(args.base_dir), load_specs(args.head_dir)
    plan = diff_specs(base, head)
    print(RENDERERS[args.format](plan), end="")
    return 0 if plan.empty else 2
