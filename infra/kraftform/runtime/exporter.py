"""kraftform's own Prometheus endpoint: what no Kafka MBean holds.

Consumer lag as kraftform measures it (a Spark consumer's checkpoint against the end offsets; a consumer group's
committed offsets), `status`'s verdict, and when the certificates kraftform made end. Each scrape looks at the
cluster once (cached for a few seconds, so two Prometheus servers do not double the requests); a failed look is
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

CACHE_S = 3.0


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
        from kraftform.runtime.deployment import load_secrets

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
    out += ["# TYPE kraftform_consumer_lag_limit_records gauge"]
    out += [_line("kraftform_consumer_lag_limit_records", {**base, "consumer": c.name, "kind": c.kind}, c.limit)
            for c in status.consumers]
    return "\n".join(out) + "\n"


class _Looker:
    """One status at a time, reused for CACHE_S."""

    def __init__(self, specs: SpecSet, connection: Connection, data_dir: Path, state_dir: Path | None) -> None:
        self.specs, self.connection, self.data_dir, self.state_dir = specs, connection, data_dir, state_dir
        self.lock = threading.Lock()
        self.cached: tuple[float, str] = (0.0, "")

    def metrics(self) -> str:
        from kraftform.runtime.status import status_of

        with self.lock:
            at, text = self.cached
            if time.monotonic() - at < CACHE_S:
                return text
            try:
                status: Status | None = status_of(self.specs, self.connection, self.data_dir)
            except Exception as exc:  # a scrape answers `kraftform_status_up 0`, whatever failed
                print(f"kraftform exporter: cannot read the cluster: {type(exc).__name__}: {exc}", file=sys.stderr,
                      flush=True)
                status = None
            text = render_metrics(self.specs.cluster.name, status, certificates(self.state_dir, self.connection))
            self.cached = (time.monotonic(), text)
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
    server = ThreadingHTTPServer((host, port), handler(_Looker(specs, connection, data_dir, state_dir)))
    try:
        server.serve_forever()
    finally:
        server.server_close()
