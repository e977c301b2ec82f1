"""PostgreSQL as kraftform starts it for change data capture: the capture role's password reaches the server only as
its SCRAM verifier, and no SQL goes on a command line."""

from __future__ import annotations

import secrets

import pytest

from kraftform.errors import KafkaRequestFailed
from kraftform.runtime.postgres import LocalPostgres
from kraftform.verification.secretscan import CommandLineSampler

pytestmark = pytest.mark.integration


def test_the_capture_role_logs_in_with_a_password_the_server_only_ever_saw_as_its_verifier() -> None:
    password = secrets.token_urlsafe(16)
    pg = LocalPostgres(password)
    with CommandLineSampler(0.01) as sampler:  # psql's few hundred milliseconds are caught
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
            pg.down()
    seen = sampler.seen
    assert any(arg.endswith("psql") for line in seen for arg in line.split(" ")), \
        "no psql command line sampled: the check would prove nothing"
    assert [line for line in seen if password in line] == [], "a command line held the password"
    assert password not in log
