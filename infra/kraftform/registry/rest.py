"""A client of a schema registry's Confluent-compatible API: the registry kraftform runs (Apicurio, mutual TLS
with a certificate from the cluster's CA) or one a team runs (HTTP basic authentication, TLS verified against
the system's or a given CA).

Errors come back as kraftform's: an unreachable registry is ConnectionFailed, a refused login or certificate
AuthenticationFailed, a refused write AuthorizationDenied, anything else the registry refuses KafkaRequestFailed
with its own message.
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any

from kraftform.errors import AuthenticationFailed, AuthorizationDenied, ConnectionFailed, KafkaRequestFailed
from kraftform.plan.subjects import CheckAnswer

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
#: The registry's error codes kraftform tells apart (Confluent's, which Apicurio's compatible API answers too).
SUBJECT_NOT_FOUND = 40401


@dataclass(frozen=True)
class Version:
    """One registered version of a subject."""

    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = "AVRO"


class NotFound(KafkaRequestFailed):
    """A subject or version the registry does not have."""


@dataclass(frozen=True)
class RegistryRest:
    #: The Confluent-compatible API's root (Apicurio: https://HOST:PORT/apis/ccompat/v6).
    url: str
    ca_path: str | None = None
    #: A client certificate and its key (PEM files): the registry kraftform runs admits no one without one.
    cert_path: str | None = None
    key_path: str | None = None
    user: str | None = None
    password: str | None = field(default=None, repr=False)
    timeout: float = 30.0

    def _context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=self.ca_path)
        if self.cert_path is not None:
            context.load_cert_chain(self.cert_path, self.key_path)
        return context

    def request(self, method: str, path: str, body: Any = None, root: str | None = None) -> Any:
        """The decoded JSON answer (None when empty). `root`: another API of the same registry (Apicurio's own)."""
        headers = {"Accept": "application/json", "Content-Type": CONTENT_TYPE}
        if self.user is not None:
            token = base64.b64encode(f"{self.user}:{self.password or ''}".encode()).decode()
            headers["Authorization"] = f"Basic {token}"
        data = None if body is None else json.dumps(body).encode()
        target = (root or self.url) + path
        request = urllib.request.Request(target, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout,
                                        context=self._context() if target.startswith("https:") else None) as answer:
                raw = answer.read()
        except urllib.error.HTTPError as exc:
            raw_error = exc.read()
            message, code = _message(raw_error)
            if exc.code == 401:
                raise AuthenticationFailed(f"the schema registry at {self.url} refused kraftform's login: "
                                           f"{message}") from None
            if exc.code == 403:
                raise AuthorizationDenied(f"the schema registry at {self.url} refused {method} {path}: "
                                          f"{message}") from None
            if exc.code == 404:
                raise NotFound(message, code) from None
            raise KafkaRequestFailed(f"the schema registry at {self.url}: {method} {path}: {exc.code} "
                                     f"{message}", _causes(raw_error)) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ConnectionFailed(f"the schema registry at {self.url} cannot be reached: {reason}") from None
        return json.loads(raw) if raw else None

    # --- What kraftform reads and changes ---

    def subjects(self) -> list[str]:
        return sorted(self.request("GET", "/subjects") or ())

    def versions(self, subject: str) -> list[int]:
        return sorted(int(v) for v in self.request("GET", f"/subjects/{_q(subject)}/versions") or ())

    def version(self, subject: str, version: int | str = "latest") -> Version:
        d = self.request("GET", f"/subjects/{_q(subject)}/versions/{version}")
        return Version(str(d["subject"]), int(d["version"]), int(d["id"]), str(d["schema"]),
                       str(d.get("schemaType") or "AVRO"))

    def compatibility(self, subject: str) -> str:
        """The level the registry checks the subject's new versions against (its own, or the registry's)."""
        try:
            d = self.request("GET", f"/config/{_q(subject)}?defaultToGlobal=true")
        except NotFound:
            d = self.request("GET", "/config")
        return str(d.get("compatibilityLevel") or d.get("compatibility"))

    def set_compatibility(self, subject: str, level: str) -> None:
        self.request("PUT", f"/config/{_q(subject)}", {"compatibility": level})

    def check(self, subject: str, schema: str, schema_type: str) -> CheckAnswer:
        """The registry's own compatibility check of `schema` against the subject's latest version, with its
        reasons when it gives them (Confluent's `verbose`; Apicurio's rule causes, asked of its own API)."""
        d = self.request("POST", f"/compatibility/subjects/{_q(subject)}/versions/latest?verbose=true",
                         _body(schema, schema_type))
        compatible = bool(d.get("is_compatible"))
        messages = tuple(str(m) for m in d.get("messages") or ())
        if not compatible and not messages and self.url.endswith("/apis/ccompat/v6"):
            messages = self._apicurio_causes(subject, schema)
        return CheckAnswer(compatible, messages)

    def _apicurio_causes(self, subject: str, schema: str) -> tuple[str, ...]:
        """Apicurio's compatible API says only "not compatible"; its own API's test of an update says why."""
        native = self.url.removesuffix("/apis/ccompat/v6") + "/apis/registry/v2"
        try:
            self.request("PUT", f"/groups/default/artifacts/{_q(subject)}/test", json.loads(schema), root=native)
        except KafkaRequestFailed as exc:
            return tuple(exc.args[1]) if len(exc.args) > 1 and exc.args[1] else (str(exc.args[0]),)
        return ()

    def lookup(self, subject: str, schema: str, schema_type: str) -> int | None:
        """The version of the subject whose schema is `schema`, or None when it has none."""
        try:
            d = self.request("POST", f"/subjects/{_q(subject)}", _body(schema, schema_type))
        except NotFound:
            return None
        return int(d["version"])

    def register(self, subject: str, schema: str, schema_type: str) -> int:
        """The schema's id; a schema the subject already has is not registered again (the registry answers its
        id)."""
        return int(self.request("POST", f"/subjects/{_q(subject)}/versions", _body(schema, schema_type))["id"])

    def delete_subject(self, subject: str) -> None:
        self.request("DELETE", f"/subjects/{_q(subject)}")


def _q(subject: str) -> str:
    return urllib.parse.quote(subject, safe="")


def _body(schema: str, schema_type: str) -> dict[str, str]:
    return {"schema": schema} if schema_type == "AVRO" else {"schema": schema, "schemaType": schema_type}


def _message(raw: bytes) -> tuple[str, int | None]:
    try:
        d = json.loads(raw)
        return str(d.get("message", raw.decode(errors="replace"))), d.get("error_code")
    except (ValueError, AttributeError):
        return raw.decode(errors="replace")[:500], None


def _causes(raw: bytes) -> tuple[str, ...]:
    """Apicurio's rule violations, each in one line: what it found, where."""
    try:
        causes = json.loads(raw).get("causes") or ()
    except (ValueError, AttributeError):
        return ()
    return tuple(" ".join(f"{c.get('description', '')} (at {c.get('context', '/')})".split()) for c in causes)
