"""A client of one Connect cluster's REST API: HTTPS verified against the cluster's CA, HTTP basic authentication.

Errors come back as kraftform's: an unreachable worker is ConnectionFailed, a refused login
AuthenticationFailed, anything else Connect refuses KafkaRequestFailed with Connect's own message. Connect
answers 409 while its workers rebalance; such requests are asked again until `timeout`.
"""

from __future__ import annotations

import base64
import json
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from kraftform.errors import AuthenticationFailed, ConnectionFailed, KafkaRequestFailed
from kraftform.plan.connector_offsets import from_rest
from kraftform.plan.connectors import LiveConnector

#: How long a request rides out a rebalance (409) or a worker still starting.
REBALANCE_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class ConnectRest:
    url: str
    user: str
    password: str = field(repr=False)
    ca_path: str | None = None
    timeout: float = 30.0

    def _context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=self.ca_path)

    def request(self, method: str, path: str, body: Any = None, retry_s: float = REBALANCE_TIMEOUT_S) -> Any:
        """The decoded JSON answer (None for 204); retried while Connect answers 409 (a rebalance)."""
        deadline = time.monotonic() + retry_s
        while True:
            try:
                return self._once(method, path, body)
            except _Rebalancing as exc:
                if time.monotonic() >= deadline:
                    raise KafkaRequestFailed(f"Kafka Connect at {self.url}: {method} {path}: {exc}") from None
                time.sleep(1.0)

    def _once(self, method: str, path: str, body: Any) -> Any:
        token = base64.b64encode(f"{self.user}:{self.password}".encode()).decode()
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Authorization": f"Basic {token}", "Accept": "application/json", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=self._context()) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            message = _message(exc.read())
            if exc.code == 401:
                raise AuthenticationFailed(f"Kafka Connect at {self.url} refused the login of {self.user!r}: "
                                           f"{message}") from None
            if exc.code == 409 and "already exists" in message:
                raise _Exists(message) from None
            if exc.code == 409:
                raise _Rebalancing(message) from None
            raise KafkaRequestFailed(f"Kafka Connect at {self.url}: {method} {path}: {exc.code} {message}") from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ConnectionFailed(f"Kafka Connect at {self.url} cannot be reached: {reason}") from None
        return json.loads(raw) if raw else None

    # --- What kraftform reads and changes ---

    def connectors(self) -> dict[str, LiveConnector]:
        """Every connector with its config and its and its tasks' states, in one request."""
        found = self.request("GET", "/connectors?expand=info&expand=status") or {}
        out = {}
        for name, both in found.items():
            status = both.get("status", {})
            tasks = tuple((int(t["id"]), t["state"].lower(), _trace_summary(t.get("trace", "")))
                          for t in status.get("tasks", ()))
            out[name] = LiveConnector(name, dict(both["info"]["config"]),
                                      status.get("connector", {}).get("state", "UNASSIGNED").lower(), tasks)
        return out

    def validate(self, connector_class: str, config: dict[str, str]) -> list[tuple[str, str]]:
        """(setting, message) for every error the plugin's own checks find in `config`."""
        answer = self.request("PUT", f"/connector-plugins/{urllib.parse.quote(connector_class)}/config/validate",
                              config)
        # A setting's `value` is null where the plugin reports only its definition (Debezium does so).
        values = [c.get("value") or {} for c in (answer or {}).get("configs", ())]
        return [(str(v.get("name")), str(message)) for v in values for message in v.get("errors") or ()]

    def create(self, name: str, config: dict[str, str], state: str) -> None:
        """POST, for its `initial_state` (a source declared paused never runs). Connect answers 409 both while it
        rebalances and when the connector exists: the first is asked again, the second is a create that got
        through before (an apply retried, or killed after sending it), so the config and state are put as
        declared instead of riding out a rebalance that is not happening."""
        try:
            self.request("POST", "/connectors", {"name": name, "config": config, "initial_state": state.upper()})
        except _Exists:
            self.put_config(name, config)
            self.set_state(name, state)

    def put_config(self, name: str, config: dict[str, str]) -> None:
        self.request("PUT", f"/connectors/{urllib.parse.quote(name)}/config", config)

    def set_state(self, name: str, state: str) -> None:
        verb = {"running": "resume", "paused": "pause", "stopped": "stop"}[state]
        self.request("PUT", f"/connectors/{urllib.parse.quote(name)}/{verb}")

    def restart(self, name: str, only_failed: bool = True) -> None:
        """The connector and its tasks: those failed, or every one."""
        self.request("POST", f"/connectors/{urllib.parse.quote(name)}/restart?includeTasks=true"
                             f"&onlyFailed={'true' if only_failed else 'false'}")

    def delete(self, name: str) -> None:
        self.request("DELETE", f"/connectors/{urllib.parse.quote(name)}")

    def offsets(self, name: str) -> dict[str, str]:
        """The connector's offsets by partition, as canonical JSON (KIP-875)."""
        return from_rest(self.request("GET", f"/connectors/{urllib.parse.quote(name)}/offsets"))

    def alter_offsets(self, name: str, offsets: list[tuple[str, str | None]]) -> None:
        """Each (partition, offset) as canonical JSON; an offset None resets its partition."""
        self.request("PATCH", f"/connectors/{urllib.parse.quote(name)}/offsets", {"offsets": [
            {"partition": json.loads(p), "offset": None if o is None else json.loads(o)} for p, o in offsets]})


class _Rebalancing(Exception):
    pass


class _Exists(Exception):
    pass


def _message(raw: bytes) -> str:
    try:
        return str(json.loads(raw).get("message", raw.decode(errors="replace")))
    except (ValueError, AttributeError):
        return raw.decode(errors="replace")[:500]


def _trace_summary(trace: str) -> str:
    """A Java trace in one line: its first, and its root cause (the last `Caused by:`), which Connect's wrapping
    exceptions otherwise hide."""
    lines = trace.strip().splitlines()
    if not lines:
        return ""
    causes = [line.removeprefix("Caused by: ") for line in lines if line.startswith("Caused by: ")]
    return lines[0] + (f" (caused by {causes[-1]})" if causes and causes[-1] != lines[0] else "")
