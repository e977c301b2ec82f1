"""A PostgreSQL server on this machine (Debian's package), for change data capture as kraftform's tests, benchmark
and example run it: logical decoding on (Debezium reads pgoutput), loopback only, password logins only.

PostgreSQL refuses to run as root, so when kraftform runs as root the server and its tools run as the `postgres`
user Debian's package creates, and its directory lives outside root-only places (pytest's temporary directories).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from kraftform.errors import EnvironmentMissing, KafkaRequestFailed
from kraftform.statefiles import PRIVATE, read_json, write_atomic

#: Debian installs each major version's server under here; the newest is used.
PG_ROOT = Path("/usr/lib/postgresql")
SUPERUSER = "postgres"


def pg_tool(tool: str) -> str:
    found = sorted(PG_ROOT.glob(f"*/bin/{tool}"), key=lambda p: int(p.parts[-3]) if p.parts[-3].isdigit() else 0)
    if not found:
        raise EnvironmentMissing(f"PostgreSQL's {tool} is not installed (Debian's postgresql package: "
                                 f"`bash scripts/setup` installs it)")
    return str(found[-1])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def scram_verifier(password: str, salt: bytes | None = None, iterations: int = 4096) -> str:
    """PostgreSQL's stored form of a SCRAM-SHA-256 password (RFC 5802, 7677), as libpq's PQencryptPasswordConn
    makes it: what `CREATE ROLE ... PASSWORD` may be given instead of the password. ASCII passwords (SASLprep
    leaves them as they are)."""
    salt = salt if salt is not None else secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    stored = hashlib.sha256(hmac.new(salted, b"Client Key", hashlib.sha256).digest()).digest()
    server = hmac.new(salted, b"Server Key", hashlib.sha256).digest()

    def b64(raw: bytes) -> str:
        return base64.b64encode(raw).decode()

    return f"SCRAM-SHA-256${iterations}:{b64(salt)}${b64(stored)}:{b64(server)}"


@dataclass
class LocalPostgres:
    """One server: `up()` makes and starts it with a superuser password, `down()` stops it and removes its files."""

    password: str = field(repr=False)
    host: str = "127.0.0.1"
    port: int = field(default_factory=_free_port)
    home: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="kraftform-pg-")))

    @property
    def data(self) -> Path:
        return self.home / "data"

    def _as_owner(self) -> list[str]:
        return ["runuser", "-u", SUPERUSER, "--"] if os.geteuid() == 0 else []

    def _run(self, *cmd: str, env: dict[str, str] | None = None,
             stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self._as_owner(), *cmd], capture_output=True, text=True, timeout=180, check=False,
                              env={**os.environ, **(env or {})}, input=stdin)

    def up(self) -> LocalPostgres:
        self.data.mkdir(parents=True, exist_ok=True)
        secret = self.home / "pw"
        write_atomic(secret, self.password, PRIVATE)  # 0600 before the password is in it
        if os.geteuid() == 0:
            for path in (self.home, self.data, secret):
                shutil.chown(path, SUPERUSER, SUPERUSER)
        made = self._run(pg_tool("initdb"), "-D", str(self.data), "-U", SUPERUSER, "--auth=scram-sha-256",
                         f"--pwfile={secret}")
        secret.unlink()
        if made.returncode != 0:
            raise EnvironmentMissing(f"initdb failed: {made.stderr.strip()[-500:]}")
        options = (f"-c listen_addresses={self.host} -c port={self.port} -c wal_level=logical -c max_wal_senders=4 "
                   f"-c max_replication_slots=4 -c unix_socket_directories={self.data}")
        started = self._run(pg_tool("pg_ctl"), "-D", str(self.data), "-o", options, "-l",
                            str(self.home / "postgres.log"), "-w", "start")
        if started.returncode != 0:
            raise EnvironmentMissing(f"PostgreSQL did not start: {started.stderr.strip()[-500:]} "
                                     f"(its log: {self.home / 'postgres.log'})")
        return self

    def psql(self, sql: str, user: str = SUPERUSER, database: str = "postgres") -> str:
        """`sql` run by `user` (logged in with this server's password), its rows unaligned, one per line."""
        # The SQL on standard input, not `-c`: a command line is every local user's to read.
        done = self._run("psql", "-h", self.host, "-p", str(self.port), "-U", user, "-d", database,
                         "-v", "ON_ERROR_STOP=1", "-At", "-f", "-", env={"PGPASSWORD": self.password}, stdin=sql)
        if done.returncode != 0:
            raise KafkaRequestFailed(f"PostgreSQL at {self.host}:{self.port} refused: {done.stderr.strip()}")
        return done.stdout.strip()

    def capture_database(self, database: str, role: str, table_sql: str) -> None:
        """A database whose tables `role` (a replication login with the server's password) owns, as Debezium
        needs: it creates its publication and slot itself."""
        self.psql(f"CREATE DATABASE {database}")
        # Its SCRAM verifier, as psql's \password sends it: the password itself never reaches the server, so no
        # statement text (pg_stat_activity, a statement log) holds it.
        self.psql(f"CREATE ROLE {role} LOGIN REPLICATION PASSWORD '{scram_verifier(self.password)}'")
        self.psql(f"{table_sql}; GRANT CREATE ON DATABASE {database} TO {role}", database=database)
        for table in self.psql("SELECT tablename FROM pg_tables WHERE schemaname = 'public'",
                               database=database).split():
            self.psql(f"ALTER TABLE {table} OWNER TO {role}", database=database)

    def down(self) -> None:
        if self.data.is_dir():
            self._run(pg_tool("pg_ctl"), "-D", str(self.data), "-m", "fast", "stop")
        shutil.rmtree(self.home, ignore_errors=True)


#: Where `kraftform postgres up` records the server it started beside a cluster (never its password).
STATE_FILE = "postgres.json"


def record(state_dir: Path, server: LocalPostgres, database: str, role: str) -> None:
    write_atomic(state_dir / STATE_FILE, json.dumps({"host": server.host, "port": server.port,
                                                      "home": str(server.home), "database": database,
                                                      "role": role}, indent=2) + "\n")


def recorded(state_dir: Path, password: str) -> tuple[LocalPostgres, str, str] | None:
    """The server `kraftform postgres up` started in `state_dir`, its database and role; None when none was."""
    path = state_dir / STATE_FILE
    if not path.is_file():
        return None
    found = read_json(path, "the PostgreSQL server's record")
    server = LocalPostgres(password, str(found["host"]), int(found["port"]), Path(found["home"]))
    return server, str(found["database"]), str(found["role"])
