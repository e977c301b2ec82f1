"""Kafka Connect workers on this machine, beside a local cluster: one JVM per worker, distributed mode.

Each worker's files live under `<state>/connect/<name>/worker-<i>/`: its properties (with the Connect user's
Kafka password: 0600), its REST certificate signed by the cluster's CA (PKCS#12, the only key store Connect's
Jetty reads), the JAAS file and user list of the REST API's basic authentication, and its log. The REST password
and the key stores' password are made once and kept in `<state>/connect/<name>/secrets.json` (0600); the passwords
of users connectors log in as of their own, a file each in `<state>/connect/<name>/logins/` (0700). Workers
bind the cluster's loopback range (127.A.2.<i + 1>) at the declared port and the next ones.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path

from kraftform.artifacts import CONNECT_LOG4J2_FILE, builtin_plugin, connect_plugin, ensure_connect
from kraftform.cluster.certificates import issue, pkcs12_keystore, pkcs12_truststore
from kraftform.cluster.connect import (
    CONNECT_MAIN,
    REST_USER,
    RenderedWorker,
    WorkerFiles,
    jaas_config,
    rest_port,
    rest_users,
    worker_environment,
    worker_java_options,
    worker_properties,
    worker_properties_text,
)
from kraftform.cluster.connection import Connection
from kraftform.connect.rest import ConnectRest
from kraftform.errors import (
    AuthenticationFailed,
    ClusterUnhealthy,
    ConnectionFailed,
    KafkaRequestFailed,
    UsageError,
)
from kraftform.plan.connectors import Logins
from kraftform.runtime.nodes import deployment as dep
from kraftform.runtime.nodes.local import java_binary, last_error_line, loopback_base, tail
from kraftform.specset.model import ConnectSpec
from kraftform.statefiles import PRIVATE, read_json, write_atomic
from kraftform.versions import CONNECT_VERSION
from kraftform.waiting import NotYet, poll

#: Kafka's own plugins every worker loads: FileStream source and sink, MirrorMaker 2.
DEFAULT_PLUGINS = ("file", "mirror")
#: The REST API's basic authentication goes on the worker's class path, not plugin.path: JAAS loads its login
#: module through the request thread's class loader, which does not see a plugin's (every login then failed:
#: "User cannot access the resource").
CLASS_PATH_PLUGINS = ("basic-auth",)
WORKERS_FILE = "workers.json"
SECRETS_FILE = "secrets.json"
LOGINS_DIR = "logins"
#: Which versions of the login files the tasks have read (`ConnectWorkers.mark_logins_applied`).
LOGINS_APPLIED_FILE = "logins-applied.json"
#: The names (never the values) of the variables the workers were started with.
ENVIRONMENT_FILE = "environment-names.json"
#: The user the workers log in to the cluster as (never its password): a plan leaves it alone while they run.
LOGIN_FILE = "login.json"
LOG_FILE = "worker.log"
#: A worker's first start loads every plugin and joins the group: 20-40 s on 2 cores.
START_TIMEOUT_S = 180.0

Progress = Callable[[str], None]


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None


@dataclass
class WorkerRecord:
    index: int
    host: str
    port: int
    pid: int


def _worker_alive(pid: int, directory: str) -> bool:
    """Whether `pid` runs a Connect worker whose files are under `directory`: a recycled pid belongs to someone
    else."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return CONNECT_MAIN.encode() in cmdline and directory.encode() in cmdline


def serves(rest: ConnectRest) -> None:
    """One attempt of a wait for a worker's REST API: NotYet while it does not answer; a refused login raises at once
    (the API runs and refuses kraftform's login: no waiting mends that)."""
    try:
        rest.request("GET", "/connectors", retry_s=0)
    except AuthenticationFailed:
        raise  # a ConnectionFailed, but not one to wait out
    except (ConnectionFailed, KafkaRequestFailed) as exc:
        raise NotYet(str(exc)) from None


def worker_host(state_dir: Path, index: int) -> str:
    return f"{loopback_base(state_dir)}2.{index + 1}"


class ConnectWorkers:
    """The workers of one declared Connect cluster, for one local cluster's state directory."""

    def __init__(self, state_dir: Path, spec: ConnectSpec) -> None:
        self.state_dir = state_dir.resolve()
        self.spec = spec
        self.dir = self.state_dir / "connect" / spec.name

    # --- secrets and files --------------------------------------------------------------------------------

    def _secrets(self) -> dict[str, str]:
        path = self.dir / SECRETS_FILE
        if path.is_file():
            return dict(read_json(path, f"Connect cluster {self.spec.name}'s REST and key store passwords"))
        made = {"rest_password": secrets.token_urlsafe(24), "store_password": secrets.token_urlsafe(24)}
        write_atomic(path, json.dumps(made), PRIVATE)
        return made

    def rest(self) -> ConnectRest:
        """A client of the first worker that answers (the REST API forwards to the leader where it must)."""
        records = self._records()
        if not records:
            raise UsageError(f"Connect cluster {self.spec.name!r} is not running here; start it with "
                             f"`kraftform connect up`")
        alive = [r for r in records if self._alive(r)] or records
        return self._client(alive[0])

    def _client(self, record: WorkerRecord, timeout: float = 30.0) -> ConnectRest:
        """kraftform's REST login to one worker, TLS verified against the cluster's CA."""
        return ConnectRest(f"https://{record.host}:{record.port}", REST_USER, self._secrets()["rest_password"],
                           dep.admin_config(self.state_dir).ca_path, timeout)

    def _files(self, index: int) -> WorkerFiles:
        d = self.dir / f"worker-{index}"
        return WorkerFiles(str(d), str(d / "tls" / "rest.p12"), str(d / "tls" / "truststore.p12"),
                           str(d / "jaas.conf"), str(d / "rest-users.properties"), str(self.logins_dir))

    @property
    def logins_dir(self) -> Path:
        """The connector users' passwords, a file each (0600): what `login_reference` points the workers to."""
        return self.dir / LOGINS_DIR

    @property
    def _applied_file(self) -> Path:
        """Each login file's version (modification time, ns) when the tasks last restarted to read it: beside the
        directory the workers read, never in it."""
        return self.dir / LOGINS_APPLIED_FILE

    def _versions(self) -> dict[str, int]:
        return {u: path.stat().st_mtime_ns for u in self.spec.connector_users
                if (path := self.logins_dir / u).is_file()}

    def _applied(self) -> dict[str, int] | None:
        if not self._applied_file.is_file():
            return None
        return {str(k): int(v) for k, v in read_json(self._applied_file, "the connector logins' record").items()}

    def logins(self, found: Mapping[str, str | None]) -> Logins:
        """The connector users' logins against `found` (user -> password, None when not set). A login is stale
        while its file differs from the password, or was written after the tasks last restarted to read it (an
        apply that failed between the two: the plan restarts them again rather than call them done)."""
        users = self.spec.connector_users
        applied, versions = self._applied(), self._versions()

        def stale(user: str) -> bool:
            return _read(self.logins_dir / user) != found[user] or (
                applied is not None and applied.get(user) != versions.get(user))

        return Logins(str(self.logins_dir), frozenset(u for u in users if found.get(u) is not None and stale(u)),
                      frozenset(u for u in users if found.get(u) is None))

    def mark_logins_applied(self) -> None:
        """The tasks now hold what the login files say (an apply restarted them and they run)."""
        write_atomic(self._applied_file, json.dumps(self._versions()), PRIVATE)

    def write_logins(self, found: Mapping[str, str | None]) -> None:
        """Each connector user's password where the workers read it when a task starts; the files of users no
        connector logs in as any more go."""
        users = self.spec.connector_users
        unset = [u for u in users if found.get(u) is None]
        if unset:
            raise UsageError(f"Connect cluster {self.spec.name!r}: the password of connector user(s) "
                             f"{', '.join(unset)} is not set")
        self.logins_dir.mkdir(parents=True, exist_ok=True)
        self.logins_dir.chmod(0o700)
        if self._applied() is None:  # the files as they are were read by the tasks (before this record existed)
            self.mark_logins_applied()
        for user in users:
            password = found[user]
            assert password is not None
            if _read(self.logins_dir / user) != password:
                write_atomic(self.logins_dir / user, password, PRIVATE)
        for stale in self.logins_dir.iterdir():
            if stale.name not in users:
                stale.unlink()

    def render(self, kafka: Mapping[str, str], plugin_path: tuple[str, ...]) -> list[RenderedWorker]:
        store = self._secrets()["store_password"]
        return [RenderedWorker(i, worker_host(self.state_dir, i), rest_port(self.spec, i),
                               worker_properties(self.spec, i, worker_host(self.state_dir, i), kafka,
                                                 self._files(i), store, plugin_path))
                for i in range(self.spec.workers)]

    def _write(self, worker: RenderedWorker) -> bool:
        """The worker's files; True when its properties changed (a running worker must restart to read them)."""
        files = self._files(worker.index)
        passwords = self._secrets()
        target = Path(files.dir) / "worker.properties"
        text = worker_properties_text(self.spec, worker.index, worker.properties)
        changed = not target.is_file() or target.read_text() != text
        if changed:
            write_atomic(target, text, PRIVATE)
        if not Path(files.keystore).is_file():
            ca = dep.load_secrets(self.state_dir).ca
            pair = issue(ca, f"{self.spec.name} Connect worker {worker.index}",
                         ["localhost", worker.host, "127.0.0.1"])
            write_atomic(Path(files.keystore), pkcs12_keystore(pair, passwords["store_password"]), PRIVATE)
            write_atomic(Path(files.truststore), pkcs12_truststore(ca.cert_pem, passwords["store_password"]))
        write_atomic(Path(files.jaas), jaas_config(files.rest_users))
        write_atomic(Path(files.rest_users), rest_users(passwords["rest_password"]), PRIVATE)
        return changed

    # --- processes ----------------------------------------------------------------------------------------

    def _records(self) -> list[WorkerRecord]:
        path = self.dir / WORKERS_FILE
        if not path.is_file():
            return []
        return [WorkerRecord(**r) for r in read_json(path, f"Connect cluster {self.spec.name}'s workers")]

    def _save(self, records: list[WorkerRecord]) -> None:
        write_atomic(self.dir / WORKERS_FILE, json.dumps([asdict(r) for r in records], indent=2) + "\n")

    def _alive(self, record: WorkerRecord) -> bool:
        return _worker_alive(record.pid, self._files(record.index).dir)

    def _start(self, worker: RenderedWorker, env: Mapping[str, str]) -> WorkerRecord:
        files = self._files(worker.index)
        home = ensure_connect(CONNECT_VERSION)
        options = worker_java_options(self.spec.heap_bytes, files.jaas, str(home / "config" / CONNECT_LOG4J2_FILE))
        classpath = [str(home / "libs" / "*"),
                     *(str(builtin_plugin(name) / "libs" / "*") for name in CLASS_PATH_PLUGINS)]
        cmd = [java_binary(), *options, "-cp", os.pathsep.join(classpath), CONNECT_MAIN,
               str(Path(files.dir) / "worker.properties")]
        with open(Path(files.dir) / LOG_FILE, "ab") as log:
            log.write(f"=== kraftform: starting worker {worker.index} at {time.strftime('%H:%M:%S')}\n".encode())
            log.flush()
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True, cwd=files.dir, env=worker_environment(self.spec, env))
        return WorkerRecord(worker.index, worker.host, worker.port, proc.pid)

    def _stop(self, record: WorkerRecord, sig: int = signal.SIGTERM, grace: float = 30) -> None:
        if not self._alive(record):
            return
        os.kill(record.pid, sig)
        deadline = time.monotonic() + grace
        while self._alive(record) and time.monotonic() < deadline:
            time.sleep(0.2)
        if self._alive(record):
            os.kill(record.pid, signal.SIGKILL)

    def plugin_path(self) -> tuple[str, ...]:
        """Kafka's own plugins and the declared ones, fetched once each, their checksums checked."""
        return (*(str(builtin_plugin(name)) for name in DEFAULT_PLUGINS),
                *(str(connect_plugin(p.maven, p.sha256, p.exclude, f"plugin {p.name!r} ({p.location})"))
                  for p in self.spec.plugins))

    def up(self, login: Connection, env: Mapping[str, str], progress: Progress,
           timeout: float = START_TIMEOUT_S) -> list[WorkerRecord]:
        """Start the workers that are not running, restart (one at a time) those whose files changed, stop those
        past the declared count; return when every worker's REST API answers an authenticated request. `login`:
        the Connect cluster's user on the cluster."""
        kafka = login.java()
        # Everything fetched and checked before any worker is touched: a refused checksum stops nothing.
        plugin_path = self.plugin_path()
        ensure_connect(CONNECT_VERSION)
        kept = {r.index: r for r in self._records()}
        records: list[WorkerRecord] = []
        for worker in self.render(kafka, plugin_path):
            changed = self._write(worker)
            record = kept.pop(worker.index, None)
            if record is not None and self._alive(record):
                if not changed:
                    records.append(record)
                    continue
                progress(f"{self.spec.name}: restarting worker {worker.index} (its configuration changed) ...")
                self._stop(record)
            else:
                again = " again (it was not running)" if record is not None else ""
                progress(f"{self.spec.name}: starting worker {worker.index}{again} on {worker.url} ...")
            started = self._start(worker, env)
            records.append(started)
            self._save(records + list(kept.values()))
            self._wait_up(started, timeout)
        for extra in kept.values():
            progress(f"{self.spec.name}: stopping worker {extra.index} (no longer declared) ...")
            self._stop(extra)
        self._save(records)
        self.record_started(login)
        return records

    def record_started(self, login: Connection) -> None:
        """The variables the workers now run with: a connector declared later with another one is a problem in
        the plan (`plan_connect`), not a login its validation fails in the plugin's words. And the user they log
        in as: `kraftform plan` never alters or deletes it while they run (`connect_clusters.workers_logins`)."""
        write_atomic(self.dir / ENVIRONMENT_FILE, json.dumps(sorted(self.spec.environment_names)) + "\n")
        write_atomic(self.dir / LOGIN_FILE, json.dumps({"user": login.username}) + "\n")

    def started_environment(self) -> frozenset[str] | None:
        """The connector variables the running workers were started with (None: started by an earlier kraftform,
        which passed them its whole environment)."""
        path = self.dir / ENVIRONMENT_FILE
        return frozenset(read_json(path, "the Connect workers' variables")) if path.is_file() else None

    def _wait_up(self, record: WorkerRecord, timeout: float) -> None:
        rest = self._client(record, timeout=10)
        log = Path(self._files(record.index).dir) / LOG_FILE

        def answered() -> None:
            if not self._alive(record):
                raise ClusterUnhealthy(f"Connect worker {record.index} of {self.spec.name!r} exited: "
                                       f"{last_error_line(tail(log))} (its log: {log})")
            serves(rest)

        poll(f"Connect worker {record.index} of {self.spec.name!r} to serve its REST API", timeout, answered,
             interval=1.0)

    def down(self, purge: bool = False) -> None:
        for record in self._records():
            self._stop(record)
        if purge:
            shutil.rmtree(self.dir, ignore_errors=True)
        elif self.dir.is_dir():
            self._save([])

    def running(self) -> list[WorkerRecord]:
        return [r for r in self._records() if self._alive(r)]


def running_pids(directory: Path) -> list[int]:
    """The pids of the workers running from the Connect cluster files under `directory`, as its record names
    them (no spec needed: a Connect cluster the specs no longer declare may still run)."""
    try:
        pids = [int(r["pid"]) for r in json.loads((directory / WORKERS_FILE).read_text())]
    except (OSError, ValueError, TypeError, KeyError):
        return []
    return [pid for pid in pids if _worker_alive(pid, str(directory))]


def stop_all(state_dir: Path, grace: float = 30.0) -> None:
    """Every Connect worker started beside the cluster in `state_dir`, whatever the specs now declare: before the
    cluster goes (`cluster down`, a test cluster's end, the sweep of one whose session was killed), so no worker
    outlives the cluster it logs in to."""
    stop_recorded(sorted(w.parent for w in (state_dir / "connect").glob(f"*/{WORKERS_FILE}")), grace)


def stop_recorded(directories: list[Path], grace: float = 30.0) -> int:
    """The workers the records under `directories` name stopped, SIGTERM first (a worker commits its offsets as it
    stops), SIGKILL after `grace`; how many there were."""
    running = [(pid, str(directory)) for directory in directories for pid in running_pids(directory)]
    for pid, _ in running:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while any(_worker_alive(*r) for r in running) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid, directory in running:
        if _worker_alive(pid, directory):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    return len(running)
