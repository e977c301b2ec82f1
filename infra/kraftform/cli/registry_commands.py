"""`kraftform registry build|up|down|status`: the schema registry kraftform runs beside a local cluster.

The subjects themselves are planned and applied with everything else (`kraftform plan` and `apply`); these
commands build, start and stop the registry they go to.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from kraftform.cli.spec_commands import DEFAULT_SPECS
from kraftform.declared import load_specs
from kraftform.errors import UsageError
from kraftform.specset.model import RegistrySpec, SpecSet

STATE_HELP = "the state directory of a local cluster `kraftform cluster up` started (the registry runs beside it)"


def register(sub: Any) -> None:
    registry = sub.add_parser("registry", help="the schema registry kraftform runs beside a local cluster")
    rs = registry.add_subparsers(dest="registry_command", required=True, parser_class=type(registry))
    p = rs.add_parser("build", help="build Apicurio Registry from Maven Central into kraftform's cache (once)")
    p.set_defaults(handler=cmd_build)
    for name, text, handler in (
            ("up", "start the registry the specs' `registry` section declares; returns when it answers", cmd_up),
            ("down", "stop the registry", cmd_down),
            ("status", "whether the registry runs and answers, and its subjects", cmd_status),
            ("certificate", "a client certificate from the cluster's CA that the registry lets read (not write): "
                            "for a producer's or consumer's serializer", cmd_certificate)):
        p = rs.add_parser(name, help=text, description=text)
        p.add_argument("specs_dir", nargs="?", default=DEFAULT_SPECS, metavar="SPECS_DIR")
        p.add_argument("--state-dir", type=Path, required=True, metavar="DIR", help=STATE_HELP)
        if name == "down":
            p.add_argument("--purge", action="store_true", help="also remove its files and every subject")
        if name == "certificate":
            p.add_argument("--name", required=True, help="the certificate's common name (who it is for)")
            p.add_argument("--out", type=Path, required=True, metavar="DIR", help="where NAME.pem and NAME.key go")
        p.set_defaults(handler=handler)


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cmd_build(args: argparse.Namespace) -> int:
    from kraftform.registry_app import ensure_registry

    print(ensure_registry())
    return 0


def _declared(specs: SpecSet) -> RegistrySpec:
    if specs.registry is None:
        raise UsageError("the specs declare no `registry` section")
    if specs.registry.external:
        raise UsageError(f"{specs.registry.location}: the registry is external (`registry.url`): kraftform does not "
                         f"run it")
    return specs.registry


def cmd_up(args: argparse.Namespace) -> int:
    from kraftform.runtime.registry.running import runtime_registry

    registry = runtime_registry(args.state_dir, _declared(load_specs(args.specs_dir)))
    print(f"schema registry: {registry.up(_progress)}")
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    """Found by the state directory alone, so a registry still stops once the specs no longer declare it or no
    longer load."""
    from kraftform.runtime.registry.running import stop_registry

    if not stop_registry(args.state_dir, purge=args.purge):
        print(f"schema registry: none was started beside {args.state_dir}")
        return 0
    print("schema registry: stopped" + (" and removed" if args.purge else ""))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from kraftform.runtime.registry.running import runtime_registry

    registry = runtime_registry(args.state_dir, _declared(load_specs(args.specs_dir)))
    if not registry.running():
        print(f"schema registry: not running ({registry.url})")
        return 1
    subjects = registry.client().subjects()
    print(f"schema registry: running on {registry.url}, {len(subjects)} subject(s)" +
          "".join(f"\n  {s}" for s in subjects))
    return 0


def cmd_certificate(args: argparse.Namespace) -> int:
    from kraftform.runtime.registry.running import runtime_registry

    registry = runtime_registry(args.state_dir, _declared(load_specs(args.specs_dir)))
    cert, key = registry.reader_certificate(args.name, args.out)
    print(f"{cert}\n{key}")
    return 0
