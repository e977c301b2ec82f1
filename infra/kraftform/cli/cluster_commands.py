"""`kraftform cluster up|status|down` and `kraftform images build`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kraftform.cli.spec_commands import DEFAULT_SPECS
from kraftform.declared import load_specs
from kraftform.errors import UsageError
from kraftform.runtime import RUNTIMES, get_runtime, runtime_of
from kraftform.versions import SUPPORTED_KAFKA_TEXT, supported_kafka

#: Where `cluster up` keeps a cluster's state and admin client files; every command that finds a cluster by
#: its state directory defaults to it, so the quick start's commands need no --state-dir.
DEFAULT_STATE = ".state/platform"
STATE_HELP = f"the cluster's state and admin client files (default: {DEFAULT_STATE})"


def register(sub: Any) -> None:
    cluster = sub.add_parser("cluster", help="secure KRaft clusters from the specs: up, status, down")
    cs = cluster.add_subparsers(dest="cluster_command", required=True, parser_class=type(cluster))
    up = cs.add_parser("up", help="start (or restart) a secure cluster and wait until it is healthy")
    up.add_argument("specs_dir", nargs="?", default=DEFAULT_SPECS, metavar="SPECS_DIR")
    up.add_argument("--runtime", choices=RUNTIMES, default="docker")
    up.add_argument("--state-dir", type=Path, default=Path(DEFAULT_STATE), metavar="DIR", help=STATE_HELP)
    up.add_argument("--image", default=None, help="Kafka image for the docker runtime (default: kraftform/kafka)")
    up.add_argument("--timeout", type=float, default=240, help="seconds to wait for health (default 240)")
    up.set_defaults(handler=cmd_up)
    status = cs.add_parser("status", help="brokers, controller quorum, under-replicated and offline partitions")
    status.add_argument("--state-dir", type=Path, default=Path(DEFAULT_STATE), metavar="DIR", help=STATE_HELP)
    status.set_defaults(handler=cmd_status)
    down = cs.add_parser("down", help="stop the cluster; --purge also deletes its data and state")
    down.add_argument("--state-dir", type=Path, default=Path(DEFAULT_STATE), metavar="DIR", help=STATE_HELP)
    down.add_argument("--purge", action="store_true")
    down.set_defaults(handler=cmd_down)

    images = sub.add_parser("images", help="build the Kafka, kcat and Spark images locally (no registry needed)")
    isub = images.add_subparsers(dest="images_command", required=True, parser_class=type(images))
    build = isub.add_parser(
        "build", help="debootstrap base images, then Kafka from Maven Central, kcat, Prometheus, and Spark with "
                 "kraftform")
    build.add_argument("--kafka-version", action="append", default=[], metavar="VERSION",
                       help="also build the Kafka image of this release (repeatable; the pinned one is always "
                            "built): what a stack with `kraftform:image local` runs for specs of that kafka_version")
    build.set_defaults(handler=cmd_images_build)


def cmd_up(args: argparse.Namespace) -> int:
    specs = load_specs(args.specs_dir)
    if specs.cluster.hosts and specs.registry is not None and not specs.registry.external:
        raise UsageError(f"{specs.registry.location}: a registry beside a cluster on hosts is not placed on hosts "
                         f"yet; give registry.url (one you run) or start without cluster.hosts")
    if args.runtime == "docker" and args.image is None:
        from kraftform.runtime.engines.engine import docker_client
        from kraftform.runtime.engines.images import build_kafka

        log: list[str] = []
        build_kafka(docker_client(), log, specs.cluster.kafka_version)
    runtime = get_runtime(args.runtime, args.state_dir, args.image)
    health = runtime.up(specs.cluster, timeout=args.timeout)
    from kraftform.runtime.nodes.deployment import load

    deployment = load(args.state_dir)
    state = args.state_dir
    print(f"cluster {specs.cluster.name!r} is up ({args.runtime}): {len(health.brokers)} brokers healthy")
    print(f"bootstrap servers: {deployment.bootstrap}")
    print(f"admin client configs: {state / 'admin.properties'} (Java), {state / 'admin.librdkafka.conf'} "
          f"(librdkafka: kcat -F); CA certificate: {state / 'ca.pem'}")
    if specs.registry is not None and not specs.registry.external:  # the registry the specs run beside it
        from kraftform.runtime.registry.running import runtime_registry

        url = runtime_registry(state, specs.registry).up(lambda line: print(line, file=sys.stderr, flush=True))
        print(f"schema registry: {url} (its subjects: `kraftform apply`; a reader's certificate: `kraftform "
              f"registry certificate`)")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from kraftform.runtime.nodes.deployment import load
    from kraftform.runtime.nodes.status import cluster_status

    deployment = load(args.state_dir)
    status = cluster_status(deployment, args.state_dir)
    h, q = status.health, status.quorum
    print(f"cluster {deployment.cluster_name!r} ({deployment.runtime}) at {deployment.bootstrap}")
    print(f"brokers: {len(h.brokers)} of {deployment.brokers} registered ({', '.join(map(str, h.brokers))})")
    print(f"controller quorum: leader {q.leader_id}, voters {', '.join(map(str, q.voters))}, "
          f"max follower lag {q.max_follower_lag}")
    print(f"under-replicated partitions: {h.under_replicated}; offline partitions: {h.offline}")
    print("healthy" if status.healthy else "NOT healthy")
    return 0 if status.healthy else 2


def cmd_down(args: argparse.Namespace) -> int:
    from kraftform.runtime.connect.jvm_workers import stop_all
    from kraftform.runtime.observation.monitoring import monitoring_down
    from kraftform.runtime.registry.running import stop_registry

    stop_all(args.state_dir)  # Connect workers beside the cluster go first: they log in to it
    stop_registry(args.state_dir)
    # Prometheus and the exporter too: their record is in the state directory, which --purge deletes.
    for stopped in monitoring_down(args.state_dir):
        print(f"stopped {stopped}")
    runtime_of(args.state_dir).down(purge=args.purge)
    print(f"cluster in {args.state_dir} stopped" + (" and purged" if args.purge else " (data kept)"))
    return 0


def cmd_images_build(args: argparse.Namespace) -> int:
    from kraftform.runtime.engines.engine import docker_client
    from kraftform.runtime.engines.images import build_kafka, build_kcat, build_prometheus, build_spark

    versions = list(dict.fromkeys(args.kafka_version))
    for version in versions:
        if not supported_kafka(version) or version.count(".") != 2:
            raise UsageError(f"--kafka-version {version}: not a supported Kafka release ({SUPPORTED_KAFKA_TEXT})")
    log: list[str] = []
    client = docker_client()
    build_kafka(client, log)
    for version in versions:
        build_kafka(client, log, version)
    build_kcat(client, log)
    build_prometheus(client, log)
    build_spark(client, log)
    print("\n".join(log))
    return 0
