"""`kraftform postgres up|psql|down`: a PostgreSQL server beside a local cluster, for change data capture.

The CDC example (examples/cdc) and the tests need a database whose changes Debezium captures; kraftform starts
Debian's PostgreSQL for them as it starts Kafka: logical decoding on, loopback only, password logins only. Its
password is read from an environment variable (the one the example's connector reads too), never stored.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from kraftform.errors import UsageError
from kraftform.runtime.postgres import STATE_FILE, LocalPostgres, record, recorded

PASSWORD_ENV = "KRAFTFORM_POSTGRES_PASSWORD"
STATE_HELP = "the state directory of the local cluster it runs beside (its record is kept there)"


def register(sub: Any) -> None:
    postgres = sub.add_parser("postgres", help="a PostgreSQL server for change data capture (Debian's package)")
    ps = postgres.add_subparsers(dest="postgres_command", required=True, parser_class=type(postgres))

    def command(name: str, help_text: str, handler: Any) -> argparse.ArgumentParser:
        p: argparse.ArgumentParser = ps.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--state-dir", type=Path, default=Path(".state/platform"), metavar="DIR", help=STATE_HELP)
        p.set_defaults(handler=handler)
        return p

    up = command("up", "make and start the server (logical decoding on, 127.0.0.1 only) with a database whose "
                       "tables a replication role owns, as Debezium needs", cmd_up)
    up.add_argument("--port", type=int, default=15432, help="its port on 127.0.0.1 (default 15432)")
    up.add_argument("--database", default="orders", help="the database to make (default orders)")
    up.add_argument("--role", default="cdc", help="the replication role that owns its tables (default cdc)")
    up.add_argument("--schema", type=Path, metavar="FILE", help="SQL that makes the database's tables")
    up.add_argument("--password-env", default=PASSWORD_ENV, metavar="VAR",
                    help=f"the environment variable holding the superuser's and the role's password (default "
                         f"{PASSWORD_ENV})")
    psql = command("psql", "run SQL in the database as its role; rows printed one per line, columns by |",
                   cmd_psql)
    psql.add_argument("sql", metavar="SQL")
    psql.add_argument("--password-env", default=PASSWORD_ENV, metavar="VAR")
    command("down", "stop the server and remove its files", cmd_down)


def _password(var: str) -> str:
    value = os.environ.get(var)
    if not value:
        raise UsageError(f"the environment variable {var} holds no password (the database's; `kraftform passwords "
                         f"SPECS` lists where the specs read theirs)")
    return value


def cmd_up(args: argparse.Namespace) -> int:
    password = _password(args.password_env)
    if recorded(args.state_dir, password) is not None:
        raise UsageError(f"{args.state_dir / STATE_FILE}: a PostgreSQL server already runs for this state "
                         f"directory; `kraftform postgres down --state-dir {args.state_dir}` first")
    try:
        schema = args.schema.read_text(encoding="utf-8") if args.schema else ""
    except OSError as exc:
        raise UsageError(f"{args.schema}: {exc.strerror}") from None
    from kraftform.runtime.nodes.local import listening

    if listening("127.0.0.1", args.port):
        raise UsageError(f"127.0.0.1:{args.port} is already in use on this machine; choose another --port (and "
                         f"the connector's database.port)")
    args.state_dir.mkdir(parents=True, exist_ok=True)
    server = LocalPostgres(password, port=args.port).up()
    try:
        server.capture_database(args.database, args.role, schema)
    except BaseException:
        server.down()
        raise
    record(args.state_dir, server, args.database, args.role)
    print(f"PostgreSQL at {server.host}:{server.port}: database {args.database}, role {args.role} (its log: "
          f"{server.home / 'postgres.log'})")
    return 0


def cmd_psql(args: argparse.Namespace) -> int:
    found = recorded(args.state_dir, _password(args.password_env))
    if found is None:
        raise UsageError(f"no PostgreSQL server runs for {args.state_dir}: `kraftform postgres up` first")
    server, database, role = found
    rows = server.psql(args.sql, user=role, database=database)
    if rows:
        print(rows)
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    found = recorded(args.state_dir, "")
    if found is None:
        print(f"no PostgreSQL server runs for {args.state_dir}")
        return 0
    found[0].down()
    (args.state_dir / STATE_FILE).unlink()
    print(f"PostgreSQL at {found[0].host}:{found[0].port} stopped and removed")
    return 0
