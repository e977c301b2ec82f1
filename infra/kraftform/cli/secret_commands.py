"""`kraftform passwords` and `kraftform stack client-files`: the secrets a spec set needs, taken from the
specs rather than listed by hand, and the admin client files of a cluster a Pulumi stack made.

Values are never printed: listings show where each secret is read from and whether it is there.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
from pathlib import Path
from typing import Any

from kraftform.cli.spec_commands import DEFAULT_SPECS
from kraftform.declared import load_specs
from kraftform.errors import UsageError
from kraftform.kafka.credentials import read_secret
from kraftform.specset.model import EnvSecret, SpecSet, UserSpec
from kraftform.statefiles import PRIVATE, write_atomic

WHERE = {"env": "environment variable", "file": "file", "pulumi_config": "Pulumi config secret"}


def register(sub: Any) -> None:
    p = sub.add_parser("passwords", help="every password the specs read, where from, and whether it is set")
    p.add_argument("specs_dir", nargs="?", default=DEFAULT_SPECS, metavar="SPECS_DIR")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--from-json-env", metavar="VAR",
                   help="take the environment-variable passwords from the JSON object in VAR (in GitHub Actions: "
                        "${{ toJSON(secrets) }}) ...")
    p.add_argument("--github-env", type=Path, metavar="FILE",
                   help="... and append them to FILE ($GITHUB_ENV), so later steps of the job have them")
    p.add_argument("--example-env", type=Path, metavar="FILE",
                   help="write `export NAME=random` for every environment-variable password FILE lacks (mode 0600; "
                        "scripts/example-passwords)")
    p.set_defaults(handler=cmd_passwords)

    stack = sub.add_parser("stack", help="a Pulumi stack's outputs as client files")
    ss = stack.add_subparsers(dest="stack_command", required=True, parser_class=type(stack))
    files = ss.add_parser("client-files", help="write admin.properties, admin.librdkafka.conf and ca.pem from "
                                               "`pulumi stack output --json --show-secrets`")
    files.add_argument("--outputs", type=Path, default=None, metavar="FILE",
                       help="the JSON outputs (default: standard input)")
    files.add_argument("--state-dir", type=Path, required=True, metavar="DIR")
    files.set_defaults(handler=cmd_client_files)


def _env_users(users: tuple[UserSpec, ...]) -> list[UserSpec]:
    return [u for u in users if u.password.source == "env"]


def _connector_secrets(specs: SpecSet) -> list[dict[str, Any]]:
    """The connectors' settings read from the workers' environment (`{env: NAME}`): a database password is as
    much a secret the specs need as a user's."""
    return [{"connector": c.name, "connect": k.name, "key": key, "source": "env", "name": value.name,
             "set": bool(os.environ.get(value.name))}
            for k in specs.connect for c in k.connectors for key, value in sorted(c.config.items())
            if isinstance(value, EnvSecret)]


def _env_names(specs: SpecSet) -> list[str]:
    """Every environment variable the specs read a secret from, each once, in the order the specs name them."""
    names = [u.password.name for u in _env_users(specs.users)] + [r["name"] for r in _connector_secrets(specs)]
    return list(dict.fromkeys(names))


def cmd_passwords(args: argparse.Namespace) -> int:
    specs = load_specs(args.specs_dir)
    if args.example_env:
        return _example_env(args.example_env, _env_names(specs))
    if (args.from_json_env is None) != (args.github_env is None):
        raise UsageError("--from-json-env and --github-env go together")
    if args.github_env:
        return _github_env(args.from_json_env, args.github_env, _env_names(specs))
    rows: list[dict[str, Any]] = [{"user": u.name, "source": u.password.source, "name": u.password.name,
             "set": u.password.source == "pulumi_config" or read_secret(u.password) is not None}
            for u in specs.users]
    rows += _connector_secrets(specs)
    if args.format == "json":
        print(json.dumps(rows, indent=2))
    else:
        for row in rows:
            state = "set" if row["set"] else "MISSING"
            if row["source"] == "pulumi_config":
                state = "read by Pulumi (pulumi config set --secret)"
            owner = row["user"] if "user" in row else f"connector {row['connector']} {row['key']}"
            print(f"{owner}: {WHERE[row['source']]} {row['name']}: {state}")
    missing = [f"{r['name']} ({'user ' + r['user'] if 'user' in r else 'connector ' + r['connector']})"
               for r in rows if not r["set"]]
    if missing:
        print(f"kraftform: error: {len(missing)} password(s) not set: {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0


def _github_env(var: str, target: Path, names: list[str]) -> int:
    """Append each password to a GitHub Actions environment file in its multi-line form (NAME<<DELIMITER),
    with a random delimiter, so a value can never end the entry early."""
    try:
        given = json.loads(os.environ.get(var) or "{}")
    except json.JSONDecodeError as exc:
        raise UsageError(f"--from-json-env {var}: not a JSON object ({exc.msg})") from None
    if not isinstance(given, dict):
        raise UsageError(f"--from-json-env {var}: not a JSON object")
    missing = [name for name in names if not given.get(name)]
    if missing:
        raise UsageError(f"{var} lacks the password(s) the specs read: {', '.join(missing)} "
                         f"(add them as secrets of the same name)")
    lines = []
    for name in names:
        delimiter = f"kraftform_{secrets.token_hex(8)}"
        lines += [f"{name}<<{delimiter}", str(given[name]), delimiter]
    with open(target, "a", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    print(f"exported {len(names)} password(s): {', '.join(names)}")
    return 0


def _example_env(target: Path, names: list[str]) -> int:
    kept: dict[str, str] = {}
    if target.is_file():
        for line in target.read_text(encoding="utf-8").splitlines():
            name, _, value = line.removeprefix("export ").partition("=")
            if value:
                kept[name] = value
    new = [name for name in names if name not in kept]
    made = {name: secrets.token_urlsafe(18) for name in new}
    write_atomic(target, "".join(f"export {name}={value}\n" for name, value in {**kept, **made}.items()), PRIVATE)
    print(f"{target}: {len(names)} password(s), {len(new)} new")
    return 0


def cmd_client_files(args: argparse.Namespace) -> int:
    source = "standard input" if args.outputs is None else str(args.outputs)
    try:
        text = sys.stdin.read() if args.outputs is None else args.outputs.read_text(encoding="utf-8")
        outputs = json.loads(text)
    except OSError as exc:
        raise UsageError(f"{source}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{source}: not JSON ({exc.msg} at line {exc.lineno}); give it the output of "
                         f"`pulumi stack output --json --show-secrets`") from None
    admin = outputs.get("adminConnection") if isinstance(outputs, dict) else None
    if admin == "[secret]":
        raise UsageError(f"{source}: adminConnection is hidden; run `pulumi stack output --json --show-secrets`")
    if not isinstance(admin, dict) or not isinstance(outputs.get("caCertificate"), str):
        raise UsageError(f"{source}: no adminConnection and caCertificate outputs (is this a kraftform stack, "
                         f"after `pulumi up`?)")
    try:
        from kraftform.runtime.nodes.deployment import write_client_files

        write_client_files(args.state_dir, admin["bootstrapServers"], admin["username"], admin["password"],
                           admin["saslMechanism"], outputs["caCertificate"])
    except KeyError as exc:
        raise UsageError(f"{source}: adminConnection has no {exc.args[0]}") from None
    state = args.state_dir
    print(f"wrote {state / 'admin.properties'} (Java: kraftform plan --command-config, Kafka's tools), "
          f"{state / 'admin.librdkafka.conf'} (kcat -F) and {state / 'ca.pem'}")
    return 0
