"""The connector users' login files against the passwords, and the record of what the tasks have read: a rotation
is done only once the tasks restarted after its file was written."""

from __future__ import annotations

import os
from pathlib import Path

from kraftform.runtime.connect.jvm_workers import ConnectWorkers
from kraftform.specset.model import ConnectorSpec, ConnectSpec

SPEC = ConnectSpec("cdc", "connect-workers", connectors=(
    ConnectorSpec("orders", "FileStreamSource", "source", ("orders",), user="orders-cdc"),))


def test_a_rotation_written_but_never_restarted_for_stays_in_the_plan_until_applied(tmp_path: Path) -> None:
    workers = ConnectWorkers(tmp_path, SPEC)
    workers.write_logins({"orders-cdc": "first"})
    workers.mark_logins_applied()
    assert workers.logins({"orders-cdc": "first"}).stale == frozenset()
    # The apply that rotates writes the file, then is killed before the tasks restart.
    workers.write_logins({"orders-cdc": "second"})
    assert workers.logins({"orders-cdc": "second"}).stale == {"orders-cdc"}
    workers.mark_logins_applied()  # the next apply restarted them
    assert workers.logins({"orders-cdc": "second"}).stale == frozenset()
    assert oct(os.stat(tmp_path / "connect" / "cdc" / "logins-applied.json").st_mode & 0o777) == "0o600"


def test_files_from_before_the_record_count_as_read_and_a_new_password_as_not(tmp_path: Path) -> None:
    workers = ConnectWorkers(tmp_path, SPEC)
    workers.write_logins({"orders-cdc": "first"})
    (tmp_path / "connect" / "cdc" / "logins-applied.json").unlink()  # as a kraftform before the record left it
    assert workers.logins({"orders-cdc": "first"}).stale == frozenset()
    assert workers.logins({"orders-cdc": "rotated"}).stale == {"orders-cdc"}
    workers.write_logins({"orders-cdc": "rotated"})
    assert workers.logins({"orders-cdc": "rotated"}).stale == {"orders-cdc"}


def test_a_workers_container_records_what_its_tasks_read_beside_its_logins_and_a_rotation_does_not_remake_it() -> None:
    """The stack's workers (Pulumi) keep the record in the container, not in a state directory: a digest of each
    password, never the password, out of the directory the workers' config provider reads; a new password is
    written into the running worker (its tasks restart), not a reason to make the worker again."""
    from kraftform.cluster.certificates import KeyPair
    from kraftform.runtime.connect.containers import APPLIED_LOGINS, ConnectDeployment

    def deployment(password: str) -> ConnectDeployment:
        return ConnectDeployment(SPEC, "kf", "kf-net", "image", "b:9093", KeyPair("cert", "key"), "workers-pw",
                                 "rest-pw", "store-pw", {"orders-cdc": password})

    first, second = deployment("first-secret"), deployment("second-secret")
    plugins: dict[str, Path] = {}
    files = first.text_files(0, plugins)
    marker = files[f"{APPLIED_LOGINS}/orders-cdc"]
    assert marker[1] == 0o600 and "first-secret" not in marker[0] and len(marker[0]) == 64
    assert not APPLIED_LOGINS.startswith(first.files().logins + "/")
    assert second.text_files(0, plugins)[f"{APPLIED_LOGINS}/orders-cdc"] != marker
    assert first.digest(0, plugins) == second.digest(0, plugins)


def test_on_hosts_worker_i_runs_on_host_i_mod_their_number_serving_its_rest_api_on_its_address() -> None:
    from kraftform.cluster.certificates import KeyPair
    from kraftform.runtime.connect.containers import ConnectDeployment

    spread = ConnectDeployment(SPEC, "kf", "", "image", "10.0.0.1:29092,10.0.0.2:29093", KeyPair("cert", "key"),
                               "workers-pw", "rest-pw", "store-pw", hosts=(("a", "10.0.0.1"), ("b", "10.0.0.2")))
    assert [spread.host(i) for i in range(3)] == [("a", "10.0.0.1"), ("b", "10.0.0.2"), ("a", "10.0.0.1")]
    plugins: dict[str, Path] = {}
    props = spread.properties(1, plugins)
    port = SPEC.rest_port + 1
    assert props["listeners"] == f"https://10.0.0.2:{port}" and props["rest.advertised.host.name"] == "10.0.0.2"
    assert props["bootstrap.servers"] == "10.0.0.1:29092,10.0.0.2:29093"
    # Off hosts: the container's name on the cluster's network, every interface in its container, kraftform on
    # the port published on loopback.
    alone = ConnectDeployment(SPEC, "kf", "kf-net", "image", "b:9093", KeyPair("cert", "key"), "workers-pw",
                              "rest-pw", "store-pw")
    props = alone.properties(1, plugins)
    assert props["listeners"] == f"https://0.0.0.0:{port}" and props["rest.advertised.host.name"] == "kf-connect-cdc-1"
    assert (alone.host(1), alone.address(1), spread.address(1)) == (None, "127.0.0.1", "10.0.0.2")
