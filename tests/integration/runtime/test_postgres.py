"""PostgreSQL as kraftform starts it for change data capture: the capture role's password reaches the server only as
its SCRAM verifier, and no SQL goes on a command line."""

from __future__ import annotations

import secrets
import threading
from pathlib import Path

import pytest

from kraftform.errors import KafkaRequestFailed
from kraftform.runtime.postgres import LocalPostgres

pytestmark = pytest.mark.integration


def _command_lines() -> list[bytes]:
    lines = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            lines.append((proc / "cmdline").read_bytes())
        except OSError:
            continue
    return lines


def test_the_capture_role_logs_in_with_a_password_the_server_only_ever_saw_as_its_verifier() -> None:
    password = secrets.token_urlsafe(16)
    pg = LocalPostgres(password)
    seen: list[bytes] = []
    psql_lines: list[bytes] = []
    stop = threading.Event()

    def sample() -> None:  # every process's command line, throughout
        while not stop.is_set():
            lines = _command_lines()
            seen.extend(line for line in lines if password.encode() in line)
            psql_lines.extend(line for line in lines if b"psql\0" in line)
            stop.wait(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        pg.up()
        pg.capture_database("orders", "cdc", "CREATE TABLE orders (id serial PRIMARY KEY)")
        stored = pg.psql("SELECT rolpassword FROM pg_authid WHERE rolname = 'cdc'")
        assert stored.startswith("SCRAM-SHA-256$4096:") and password not in stored
        assert pg.psql("SELECT current_user", user="cdc", database="orders") == "cdc"  # the password logs it in
        with pytest.raises(KafkaRequestFailed, match="password authentication failed"):
            LocalPostgres("not-" + password, pg.host, pg.port, pg.home).psql("SELECT 1", user="cdc")
        log = (pg.home / "postgres.log").read_text(errors="replace")
    finally:
        stop.set()
        sampler.join(10)
        pg.down()
    assert psql_lines, "the sampler never saw a psql command line: it looked too seldom to prove anything"
    assert seen == [], "a command line held the password"
    assert password not in log
