"""kraftform's own Prometheus endpoint: what no Kafka MBean holds.

Consumer lag as kraftform measures it (a Spark consumer's checkpoint against the end offsets; a consumer group's
committed offsets), `status`'s verdict, and when the certificates kraftform made end. The exporter looks at the
cluster every LOOK_EVERY_S on a thread of its own and a scrape gets the last look (so any number of Prometheus
servers add no requests, and a slow cluster never makes a scrape time out); a failed or hung look is
`kraftform_status_up 0`, never stale figures. Labels carry names only, never a secret.
"""

from __future__ import annotations

import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from cryptography import x509

from kraftform.cluster.connection import Connection
from kraftform.monitoring.status import Status
from kraftform.specset.model import SpecSet

#: Seconds between the starts of two looks at the cluster (a look takes a fraction of a second when all is well).
LOOK_EVERY_S = 2.0
#: A scrape waits this long for the very first look, then answers `kraftform_status_up 0`.
FIRST_LOOK_S = 5.0
#: Figures older than this are not served: a look that hangs shows as `kraftform_status_up 0`. Above one look's
#: worst case (every request of a look gives up after seconds: kafka.status).
STALE_S = 45.0


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _line(name: str, labels: dict[str, str], value: float) -> str:
    text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
    return f"{name}{{{text}}} {float(value)!r}"


def certificates(state_dir: Path | None, connection: Connection) -> dict[str, float]:
    """Certificate -> when it ends (seconds since the epoch): the CA the client trusts and, for a cluster
    kraftform started, every node's."""
    pems: dict[str, str] = {}
    if connection.ca_path and Path(connection.ca_path).is_file():
        pems["ca"] = Path(connection.ca_path).read_text()
    if state_dir is not None and (state_dir / "secrets.json").is_file():
        from kraftform.runtime.nodes.deployment import load_secrets

        pems.update({f"node {name}": pair.cert_pem for name, pair in load_secrets(state_dir).node_keys.items()})
    ends = {}
    for name, pem in pems.items():
        cert = x509.load_pem_x509_certificate(pem.encode())
        ends[name] = cert.not_valid_after_utc.timestamp()
    return ends


def render_metrics(cluster: str, status: Status | None, certs: dict[str, float]) -> str:
    """Prometheus' text format. Pure."""
    base = {"cluster": cluster}
    out = ["# HELP kraftform_status_up 1 when kraftform could read the cluster on this scrape",
           "# TYPE kraftform_status_up gauge", _line("kraftform_status_up", base, 0 if status is None else 1)]
    out += ["# TYPE kraftform_certificate_expiry_timestamp_seconds gauge"]
    out += [_line("kraftform_certificate_expiry_timestamp_seconds", {**base, "certificate": name}, end)
            for name, end in sorted(certs.items())]
    if status is None:
        return "\n".join(out) + "\n"
    out += ["# HELP kraftform_status_healthy 1 when `kraftform status` finds nothing wrong",
            "# TYPE kraftform_status_healthy gauge", _line("kraftform_status_healthy", base, int(status.healthy)),
            "# TYPE kraftform_status_problems gauge", _line("kraftform_status_problems", base, len(status.problems)),
            "# TYPE kraftform_brokers_registered gauge",
            _line("kraftform_brokers_registered", base, len(status.brokers)),
            "# TYPE kraftform_brokers_declared gauge",
            _line("kraftform_brokers_declared", base, len(status.declared_brokers))]
    for family, attribute in (("under_replicated", "under_replicated"), ("under_min_isr", "under_min_isr"),
                              ("offline", "offline")):
        out.append(f"# TYPE kraftform_topic_{family}_partitions gauge")
        out += [_line(f"kraftform_topic_{family}_partitions", {**base, "topic": t.name}, len(getattr(t, attribute)))
                for t in status.topics if not t.missing]
    out += ["# HELP kraftform_consumer_lag_records records a declared consumer is behind the end of its topics",
            "# TYPE kraftform_consumer_lag_records gauge"]
    out += [_line("kraftform_consumer_lag_records", {**base, "consumer": c.name, "kind": c.kind}, c.lag)
            for c in status.consumers if c.lag is not None]
    out += ["# HELP kraftform_connector_as_declared 1 when a declared connector is in its declared state with no "
            "task failed", "# TYPE kraftform_connector_as_declared gauge"]
    out += [_line("kraftform_connector_as_declared", {**base, "connect": k.cluster, "connector": k.name},
                  int(k.as_declared)) for k in status.connectors if k.declared is not None]
    out += ["# HELP kraftform_connector_failed_tasks tasks of a connector in the FAILED state",
            "# TYPE kraftform_connector_failed_tasks gauge"]
    out += [_line("kraftform_connector_failed_tasks", {**base, "connect": k.cluster, "connector": k.name},
                  k.failed_tasks) for k in status.connectors]
    out += ["# TYPE kraftform_consumer_lag_limit_records gauge"]
    out += [_line("kraftform_consumer_lag_limit_records", {**base, "consumer": c.name, "kind": c.kind}, c.limit)
            for c in status.consumers]
    return "\n".join(out) + "\n"


class _Looker:
    """Looks at the cluster on its own thread, one look after another, and keeps the last look's metrics: a scrape
    answers at once whatever the cluster's latency (a look can take seconds when a broker has just died, longer
    than a short scrape timeout; Prometheus then drops the connection and records nothing)."""

    def __init__(self, specs: SpecSet, connection: Connection, data_dir: Path, state_dir: Path | None) -> None:
        self.specs, self.connection, self.data_dir, self.state_dir = specs, connection, data_dir, state_dir
        self.lock = threading.Lock()
        self.looked = threading.Event()
        self.latest: tuple[float, str] = (0.0, "")

    def start(self) -> None:
        threading.Thread(target=self._loop, name="kraftform-exporter-look", daemon=True).start()

    def _loop(self) -> None:
        while True:
            started = time.monotonic()
            self.look()
            time.sleep(max(0.0, LOOK_EVERY_S - (time.monotonic() - started)))

    def look(self) -> None:
        from kraftform.runtime.nodes.status import status_of

        try:
            status: Status | None = status_of(self.specs, self.connection, self.data_dir, self.state_dir)
        except Exception as exc:  # the metrics say `kraftform_status_up 0`, whatever failed
            print(f"kraftform exporter: cannot read the cluster: {type(exc).__name__}: {exc}", file=sys.stderr,
                  flush=True)
            status = None
        text = render_metrics(self.specs.cluster.name, status, certificates(self.state_dir, self.connection))
        with self.lock:
            self.latest = (time.monotonic(), text)
        self.looked.set()

    def metrics(self) -> str:
        """The last look's metrics; `kraftform_status_up 0` when none is younger than STALE_S (a look that hangs
        must not leave old figures standing)."""
        self.looked.wait(FIRST_LOOK_S)
        with self.lock:
            at, text = self.latest
        if not text or time.monotonic() - at > STALE_S:
            return render_metrics(self.specs.cluster.name, None, certificates(self.state_dir, self.connection))
        return text


def handler(looker: _Looker) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] != "/metrics":
                self.send_error(404, "only /metrics is served")
                return
            body = looker.metrics().encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            return

    return Handler


def serve(specs: SpecSet, connection: Connection, data_dir: Path, state_dir: Path | None, host: str,
          port: int) -> None:
    """Serve /metrics until stopped (SIGTERM, Ctrl-C)."""
    looker = _Looker(specs, connection, data_dir, state_dir)
    looker.start()
    server = ThreadingHTTPServer((host, port), handler(looker))
    try:
        server.serve_forever()
    finally:
        server.server_close()
