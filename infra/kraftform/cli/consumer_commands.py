"""`kraftform consumers list|run|status|feed`: the streaming consumers the specs declare."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kraftform.cli.cluster_commands import DEFAULT_STATE
from kraftform.cli.spec_commands import DEFAULT_SPECS
from kraftform.cluster.connection import Connection, read_connection
from kraftform.declared import load_specs
from kraftform.errors import UsageError
from kraftform.specset.model import ConsumerSpec, SpecSet

DEFAULT_DATA = ".state/consumers"

if TYPE_CHECKING:  # Spark's settings and SQL analysis load only for the consumer commands
    from kraftform.spark.manifest import JobManifest
    from kraftform.spark.settings import JobSettings


def register(sub: Any) -> None:
    consumers = sub.add_parser("consumers", help="the Spark streaming consumers: list, run, status, feed")
    cs = consumers.add_subparsers(dest="consumers_command", required=True, parser_class=type(consumers))

    p = cs.add_parser("list", help="each consumer with its effective trigger, sink guarantee and settings")
    p.add_argument("specs_dir", nargs="?", default=DEFAULT_SPECS, metavar="SPECS_DIR")
    p.set_defaults(handler=cmd_list)

    def cluster_args(p: argparse.ArgumentParser) -> None:
        p.add_argument("specs_dir", nargs="?", default=DEFAULT_SPECS, metavar="SPECS_DIR")
        where = p.add_mutually_exclusive_group()
        where.add_argument("--command-config", type=Path, metavar="FILE",
                           help="a client config of the cluster (its bootstrap servers and CA are used)")
        where.add_argument("--state-dir", type=Path, default=Path(DEFAULT_STATE), metavar="DIR",
                           help=f"a cluster from `kraftform cluster up` (default: {DEFAULT_STATE})")

    p = cs.add_parser("run", help="run one consumer in a local Spark session until stopped (Ctrl-C)")
    p.add_argument("name")
    cluster_args(p)
    p.add_argument("--job", type=Path, metavar="FILE",
                   help="run from the consumer's job manifest instead of SPECS_DIR (what its container runs; "
                        "--command-config is then the consumer's own login)")
    p.add_argument("--heartbeat", type=Path, metavar="FILE",
                   help="touch FILE every few seconds once this run has finished a micro-batch (a container's "
                        "health check reads its age); removed when the run starts")
    p.add_argument("--data-dir", type=Path, default=Path(DEFAULT_DATA),
                   help=f"checkpoints, relative sink paths and Spark event logs (default {DEFAULT_DATA})")
    p.add_argument("--available-now", action="store_true",
                   help="process what the topics hold now, then stop (Spark's availableNow trigger)")
    p.add_argument("--allow-destructive", action="store_true",
                   help="start from a new checkpoint when the definition changed its state's shape")
    p.set_defaults(handler=cmd_run)

    p = cs.add_parser("status", help="each consumer's position (from its checkpoint) and lag per partition")
    p.add_argument("--name", default=None, help="one consumer (default: all)")
    cluster_args(p)
    p.add_argument("--job", type=Path, metavar="FILE", help="the consumer of this job manifest instead of SPECS_DIR")
    p.add_argument("--data-dir", type=Path, default=Path(DEFAULT_DATA))
    p.set_defaults(handler=cmd_status)

    p = cs.add_parser("up", help="run consumers in containers beside a cluster from `cluster up --runtime docker`")
    p.add_argument("specs_dir", nargs="?", default=DEFAULT_SPECS, metavar="SPECS_DIR")
    p.add_argument("--state-dir", type=Path, default=Path(DEFAULT_STATE), metavar="DIR",
                   help=f"the Docker cluster's state directory (default: {DEFAULT_STATE})")
    p.add_argument("--name", action="append", default=[], help="a consumer to run (repeatable; default: all)")
    p.add_argument("--image", default=None,
                   help="the Spark image (default: kraftform/spark:<version>-<code digest>, built here if missing)")
    p.add_argument("--timeout", type=float, default=300,
                   help="seconds to wait until each is healthy: running, with a finished micro-batch (0: do not wait)")
    p.add_argument("--allow-destructive", action="store_true",
                   help="let a consumer start from a new checkpoint when its definition changed its state's shape")
    p.set_defaults(handler=cmd_up)

    p = cs.add_parser("down", help="stop and remove the consumer containers and the Spark standalone cluster "
                                   "(the checkpoint volume is kept)")
    p.add_argument("--state-dir", type=Path, default=Path(DEFAULT_STATE), metavar="DIR")
    p.add_argument("--purge", action="store_true", help="also delete their checkpoint and output volumes")
    p.set_defaults(handler=cmd_down)

    p = cs.add_parser("feed", help="produce realistic records to a consumer's topics, shaped by its value schema")
    p.add_argument("name")
    cluster_args(p)
    p.add_argument("--rate", type=float, default=100.0, help="records per second (default 100)")
    p.add_argument("--count", type=int, default=None, help="stop after this many (default: until Ctrl-C)")
    p.add_argument("--seed", type=int, default=None, help="repeat the same records (default: new ones each run)")
    p.set_defaults(handler=cmd_feed)


def _consumers(specs: SpecSet, names: Sequence[str]) -> list[ConsumerSpec]:
    """The consumers named (every one the specs declare when none is), each unknown name reported."""
    unknown = sorted(set(names) - {c.name for c in specs.consumers})
    if unknown:
        raise UsageError(f"no consumer {', '.join(map(repr, unknown))} in the specs (declared: "
                         f"{', '.join(c.name for c in specs.consumers) or 'none'})")
    return [c for c in specs.consumers if not names or c.name in names]


def _consumer(specs: SpecSet, name: str) -> ConsumerSpec:
    return _consumers(specs, [name])[0]


def _cluster(args: argparse.Namespace) -> Connection:
    path = args.command_config if args.command_config else args.state_dir / "admin.properties"
    return read_connection(path)


def _as_consumer(cluster: Connection, specs: SpecSet, consumer: ConsumerSpec) -> Connection:
    """The cluster's address and CA, logged in as the consumer's own SCRAM user: with the client config's
    password when that config is the consumer's own (a consumer container's), else the one the specs name."""
    from kraftform.kafka.credentials import passwords, require_password

    user = next(u for u in specs.users if u.name == consumer.user)
    own = cluster.username == user.name and cluster.password is not None
    password = cluster.password if own and cluster.password is not None else require_password(
        user, passwords((user,)))
    return Connection.scram(cluster.bootstrap, user.name, password, user.mechanism, cluster.ca_path)


def cmd_list(args: argparse.Namespace) -> int:
    from kraftform.spark.settings import job_settings

    specs = load_specs(args.specs_dir)
    for c in specs.consumers:
        settings = job_settings(c, specs)
        sink = c.sink.topic if c.sink.type == "kafka" else c.sink.path if c.sink.type == "parquet" else ""
        guarantee = "exactly-once" if settings.exactly_once else "at-least-once"
        print(f"{c.name}: {', '.join(c.topics)} -> {c.sink.type} {sink} ({guarantee}); profile {c.profile}, "
              f"{settings.trigger}, {settings.master}, user {c.user}")
        for note in settings.notes:
            print(f"  {note}")
    if not specs.consumers:
        print("no consumers declared")
    return 0


def _manifest(path: Path) -> JobManifest:
    from kraftform.spark.manifest import read_manifest

    try:
        return read_manifest(path.read_text(), str(path))
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the job manifest ({exc.strerror})") from None


def _job(args: argparse.Namespace) -> tuple[ConsumerSpec, JobSettings, Connection, bool]:
    """The consumer, its settings, its login and whether a state reset is allowed: from the specs, or from a
    job manifest and the consumer's own client config (a container's)."""
    from kraftform.spark.settings import job_settings

    if args.job is None:
        from kraftform.runtime.registry.running import avro_writers

        specs = load_specs(args.specs_dir)
        consumer = _consumer(specs, args.name)
        writers = avro_writers(specs, None if args.command_config else args.state_dir, consumer)
        return (consumer, replace(job_settings(consumer, specs), avro_writers=writers),
                _as_consumer(_cluster(args), specs, consumer), args.allow_destructive)
    manifest = _manifest(args.job)
    consumer, cluster = manifest.consumer, _cluster(args)
    if consumer.name != args.name:
        raise UsageError(f"{args.job} is the job of consumer {consumer.name!r}, not {args.name!r}")
    if cluster.username != consumer.user or cluster.password is None:
        raise UsageError(f"with --job, --command-config must be consumer {consumer.name!r}'s own login "
                         f"(user {consumer.user!r} with its password)")
    connection = Connection.scram(cluster.bootstrap, consumer.user, cluster.password, manifest.mechanism,
                                  cluster.ca_path)
    return consumer, manifest.settings, connection, args.allow_destructive or manifest.reset_allowed


def cmd_run(args: argparse.Namespace) -> int:
    from kraftform.spark.lifecycle import run_consumer

    consumer, settings, connection, allow_reset = _job(args)

    def log(line: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {consumer.name}: {line}", flush=True)

    interrupted = run_consumer(consumer, settings, connection, args.data_dir.resolve(), log, allow_reset=allow_reset,
                               available_now=args.available_now, heartbeat=args.heartbeat)
    log("stopped" + (" (interrupted)" if interrupted else ""))
    return 0


def cmd_up(args: argparse.Namespace) -> int:
    from kraftform.runtime import consumers as containers
    from kraftform.runtime.engines.engine import docker_client
    from kraftform.runtime.engines.images import build_spark

    specs = load_specs(args.specs_dir)
    chosen = _consumers(specs, args.name)
    if not chosen:
        print("no consumers declared")
        return 0
    image = args.image
    if image is None:
        log: list[str] = []
        image = build_spark(docker_client(), log)
        for line in log:
            print(line, file=sys.stderr)
    made = containers.container_specs(args.state_dir, specs, chosen, image, args.allow_destructive)
    spark = containers.spark_cluster_specs(args.state_dir, specs, image)
    containers.prepare_hosts(args.state_dir, specs, [*spark, *made])
    if spark:
        containers.spark_cluster_up(args.state_dir, spark, args.timeout or 300)
        print(f"Spark standalone master {spark[0].name} with {len(spark) - 1} worker(s): up")
    for state in containers.up(args.state_dir, made, args.timeout or None):
        print(f"consumer {state.consumer}: container {state.container} {state.status}, {state.health}")
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    from kraftform.runtime import consumers as containers

    removed = containers.down(args.state_dir, args.purge)
    print(f"removed {len(removed)} container(s){' and their volume' if args.purge else ''}: "
          f"{', '.join(removed) or 'none'}")
    return 0


def _container_status(args: argparse.Namespace) -> bool:
    """The consumers running in containers beside a Docker cluster, each reported from inside its container
    (where its checkpoint is); False when there are none."""
    from kraftform.runtime import consumers as containers
    from kraftform.runtime.nodes.deployment import STATE_FILE, load
    from kraftform.spark.containers import LABEL_SPARK

    if args.command_config or not (args.state_dir / STATE_FILE).is_file() or \
            load(args.state_dir).runtime != "docker":
        return False
    found = [s for s in containers.states(args.state_dir) if not args.name or s.consumer == args.name]
    if not found:
        return False
    for spark in containers.states(args.state_dir, LABEL_SPARK):
        print(f"Spark {spark.container}: {spark.status}, {spark.health}")
    for state in found:
        print(f"{state.consumer}: container {state.container} {state.status}, {state.health}"
              + (f" (exit code {state.exit_code})" if state.exit_code is not None else ""))
        if state.status == "running":
            print("  " + containers.position_inside(args.state_dir, state).replace("\n", "\n  "))
    return True


def cmd_status(args: argparse.Namespace) -> int:
    from kraftform.kafka.clients import end_offsets
    from kraftform.spark.checkpoint import committed_offsets
    from kraftform.spark.job import placement

    if args.job is None and _container_status(args):
        return 0
    if args.job is not None:
        chosen = [_manifest(args.job).consumer]
    else:
        specs = load_specs(args.specs_dir)
        chosen = [_consumer(specs, args.name)] if args.name else list(specs.consumers)
    cluster = _cluster(args)
    for consumer in chosen:
        where = placement(consumer, args.data_dir.resolve())
        done = committed_offsets(where.checkpoint) if where.checkpoint.is_dir() else None
        if done is None:
            print(f"{consumer.name}: no finished micro-batch in {where.checkpoint} (not started)")
            continue
        batch, positions = done
        ends = end_offsets(cluster, consumer.topics)
        lag = {tp: max(0, end - positions.get(tp, 0)) for tp, end in sorted(ends.items())}
        print(f"{consumer.name}: batch {batch} done; lag {sum(lag.values())} records on {len(lag)} partitions")
        for (topic, partition), behind in lag.items():
            print(f"  {topic}[{partition}] position {positions.get((topic, partition), 0)} end "
                  f"{ends[(topic, partition)]} lag {behind}")
    return 0


def cmd_feed(args: argparse.Namespace) -> int:
    from kraftform.kafka.clients import produce_paced
    from kraftform.spark.feed import records

    specs = load_specs(args.specs_dir)
    consumer = _consumer(specs, args.name)
    if args.rate <= 0:
        raise UsageError("--rate must be positive")

    def progress(sent: int, seconds: float) -> None:
        print(f"{sent} records in {seconds:.0f} s to {', '.join(consumer.topics)}", file=sys.stderr, flush=True)

    from kraftform.runtime.registry.running import declared_schema_id

    avro_id = declared_schema_id(specs, None if args.command_config else args.state_dir, consumer)
    try:
        seed = args.seed if args.seed is not None else time.time_ns()
        sent = produce_paced(_cluster(args), records(consumer, seed, avro_id=avro_id), args.rate, args.count,
                             progress=progress)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 0
    print(f"produced {sent} records to {', '.join(consumer.topics)}")
    return 0
