"""The schema registry and the topics' subjects under `pulumi up`, by the code `kraftform registry up`, `plan` and
`apply` run (`runtime.registry.container`, `registry.reconcile`), not a second one.

- `SchemaRegistry`: the registry kraftform runs, a container beside the stack's cluster on its network. Its TLS
  material (the server's key store, kraftform's client certificate, the stores' password) is made at create from
  the cluster's CA and kept as secret outputs, so an update keeps the certificates clients pinned; its subjects
  live on its volume. diff: the inputs, then what runs (a container stopped, removed or made from something else
  is a change the update repairs). delete: the container and its volume.
- `Subjects`: every declared subject as one resource, planned against the live registry in `check`, so
  `pulumi preview` shows each version to register as the `plan` input (`subject: what the plan does`) and a
  version the registry's compatibility check or a declared consumer refuses fails the preview in the plan's
  words. A version registered by hand, or a subject deleted by hand, is a planned change too: the next
  `pulumi up` repairs what it may and refuses what it must (a later version is never deleted). Its output
  `writers` holds each Avro value subject's registered versions by id: what an Avro consumer's job decodes with.

Providers are pickled into the stack's state, so they hold nothing: files a client needs are written for one
call into a private temporary directory and removed when it ends.
"""

from __future__ import annotations

import base64
import contextlib
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import CheckFailure, CheckResult, CreateResult, DiffResult, ResourceProvider, UpdateResult
from pulumi.output import Unknown
from pulumi.runtime.rpc import UNKNOWN

from kraftform.cluster.certificates import KeyPair
from kraftform.cluster.spec_json import from_json, to_json
from kraftform.errors import ConnectionFailed, KafkaRequestFailed, PlanRefusedError
from kraftform.plan.changes import Action, Change, Safety
from kraftform.pulumi.nodes import _plain
from kraftform.registry.reconcile import apply_subjects, plan_subjects, registered_schemas
from kraftform.registry.rest import NotFound, RegistryRest
from kraftform.runtime.registry.base import CCOMPAT_PATH
from kraftform.runtime.registry.container import DockerRegistry
from kraftform.spark.schema_gate import readers_broken
from kraftform.specset.model import ConsumerSpec, RegistrySpec, SubjectSpec
from kraftform.statefiles import PRIVATE, write_atomic

#: The registry's files made at create and kept (secret) in the stack's state, relative to its directory.
MADE_FILES = ("secrets.json", "tls/keystore.p12", "tls/truststore.p12", "client.pem", "client.key")
#: Inputs a change of which is another registry (its container's and volume's names), not a change of this one.
IDENTITY = ("cluster",)


def _progress(line: str) -> None:
    """On the provider's standard error (its standard output is the engine's channel)."""
    print(line, file=sys.stderr, flush=True)


def registry_url(spec: RegistrySpec) -> str:
    """Where the registry kraftform runs answers on this machine (published on loopback only)."""
    return f"https://127.0.0.1:{spec.port}{CCOMPAT_PATH}"


def registry_props(spec: RegistrySpec, cluster: str, network: pulumi.Input[str], image: pulumi.Input[str],
                   ca: pulumi.Input[dict[str, str]]) -> dict[str, Any]:
    """The registry resource's inputs (`ca` the cluster CA's `cert` and `key`)."""
    return {"port": spec.port, "heap_bytes": spec.heap_bytes, "cluster": cluster, "network": network,
            "image": image, "ca": ca}


@contextlib.contextmanager
def _registry(props: Mapping[str, Any]) -> Iterator[DockerRegistry]:
    """The registry for one provider call, its kept files (if any yet) in a private temporary directory."""
    p = _plain(props)
    with tempfile.TemporaryDirectory(prefix="kraftform-registry-") as tmp:
        state = Path(tmp)
        write_atomic(state / "ca.pem", p["ca"]["cert"])
        for name, data in (p.get("files") or {}).items():
            write_atomic(state / "registry" / name, base64.b64decode(data), PRIVATE)
        spec = RegistrySpec(port=int(p["port"]), heap_bytes=int(p["heap_bytes"]))
        yield DockerRegistry(state, spec, p["cluster"], p["network"], p["image"],
                             KeyPair(p["ca"]["cert"], p["ca"]["key"]))


def _up(props: Mapping[str, Any]) -> dict[str, Any]:
    """The registry as declared and answering; the outputs: the inputs, the kept files and the client's login."""
    with _registry(props) as registry:
        registry.up(_progress)
        files = {name: base64.b64encode((registry.dir / name).read_bytes()).decode() for name in MADE_FILES}
        client = {"url": registry.url, "ca": props["ca"]["cert"],
                  "cert": (registry.dir / "client.pem").read_text(), "key": (registry.dir / "client.key").read_text()}
    return {**props, "files": files, "client": client}


class SchemaRegistryProvider(ResourceProvider):
    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        old, new = _plain(olds), _plain(news)
        changed = [k for k in new if k not in ("files", "client") and old.get(k) != new.get(k)]
        replaces = [k for k in IDENTITY if old.get(k) != new.get(k)]
        if not changed:
            with _registry({**new, "files": old.get("files")}) as registry:
                drift = registry.drift()
            if drift is not None:
                _progress(f"schema registry: {drift}")
                changed.append("running")
        return DiffResult(changes=bool(changed), replaces=replaces, delete_before_replace=True)

    def create(self, props: dict[str, Any]) -> CreateResult:
        outs = _up(props)
        return CreateResult(f"{props['cluster']}/registry", outs)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(_up({**news, "files": olds.get("files")}))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        """The container and its volume: the subjects go with the stack (Pulumi's `protect` guards a prod one)."""
        with _registry(props) as registry:
            registry.down(purge=True)


class SchemaRegistry(pulumi.dynamic.Resource):
    """The registry kraftform runs beside the stack's cluster; `client` is kraftform's login to it (secret)."""

    client: pulumi.Output[dict[str, str]]

    def __init__(self, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions) -> None:
        hidden = ["ca", "files", "client"]
        super().__init__(SchemaRegistryProvider(), name, {
            **props, "ca": pulumi.Output.secret(props["ca"]), "files": None, "client": None},
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=hidden)))


# --- subjects ------------------------------------------------------------------------------------------------------

def subjects_props(subjects: tuple[SubjectSpec, ...], consumers: tuple[ConsumerSpec, ...], topics: list[str],
                   registry: pulumi.Input[dict[str, Any]], protect: bool) -> dict[str, Any]:
    """The subjects resource's inputs: the subjects keyed by name (the engine's diff then names the one that
    changed), the consumers that read their topics (the consumer gate), the stack's topics (whose undeclared
    subjects it deletes) and the registry's login (`url` with `ca`, `cert` and `key`, or `username` and
    `password` for an external one)."""
    read = {s.topic for s in subjects}
    return {"subjects": {s.name: {k: v for k, v in to_json(s).items() if k != "location"} for s in subjects},
            "consumers": [to_json(c) for c in consumers if read & set(c.topics)], "topics": sorted(topics),
            "registry": registry, "protect": protect}


@contextlib.contextmanager
def _rest(login: Mapping[str, Any]) -> Iterator[RegistryRest]:
    """The registry's client for one call; its certificate's files private and removed when the call ends."""
    if not login.get("cert"):
        yield RegistryRest(login["url"], user=login.get("username") or None, password=login.get("password") or None)
        return
    with tempfile.TemporaryDirectory(prefix="kraftform-registry-client-") as tmp:
        paths = {k: Path(tmp) / f"{k}.pem" for k in ("ca", "cert", "key")}
        for key, path in paths.items():
            write_atomic(path, login[key], PRIVATE)
        yield RegistryRest(login["url"], str(paths["ca"]), str(paths["cert"]), str(paths["key"]))


def _subjects(props: Mapping[str, Any]) -> tuple[SubjectSpec, ...]:
    return tuple(from_json(SubjectSpec, s) for _, s in sorted(_plain(props.get("subjects") or {}).items()))


def _plan(rest: RegistryRest, props: Mapping[str, Any]) -> list[Change]:
    consumers = [from_json(ConsumerSpec, c) for c in _plain(props.get("consumers") or [])]
    topics = set(props.get("topics") or ())
    return plan_subjects(rest, _subjects(props), topics.__contains__,
                         lambda subject, old, label: readers_broken(subject, old, label, consumers))


def _described(changes: list[Change]) -> dict[str, str]:
    """The plan as the preview shows it: each subject's changes in the plan's words."""
    out: dict[str, list[str]] = {}
    for c in changes:
        out.setdefault(c.resource, []).append(f"{c.action} {c.key}: {c.reason}")
    return {name: "; ".join(lines) for name, lines in sorted(out.items())}


def _unknown(value: Any) -> bool:
    """A value the engine computes later (an output of a resource this run makes or changes): the preview's
    inputs hold it as `Unknown` (the provider host keeps unknowns in check and diff), or as its wire string."""
    if isinstance(value, Mapping):
        return any(_unknown(v) for v in value.values())
    return isinstance(value, Unknown) or bool(value == UNKNOWN)


def _writers(rest: RegistryRest, subjects: tuple[SubjectSpec, ...]) -> dict[str, dict[str, str]]:
    """Each Avro value subject's topic: its registered versions' schemas by schema id."""
    out: dict[str, dict[str, str]] = {}
    for subject in subjects:
        if subject.part != "value" or subject.schema_type != "AVRO":
            continue
        found = out.setdefault(subject.topic, {})
        try:
            numbers = rest.versions(subject.name)
        except NotFound:
            continue
        found.update(registered_schemas(rest, subject.name, numbers))
    return out


class SubjectsProvider(ResourceProvider):
    def check(self, olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        """The live plan as the `plan` input; refused and (while protected) destructive changes as failures, each
        naming its subject first (Pulumi prints a property's value before the reason)."""
        login = news.get("registry")
        if login is None or _unknown(login):  # the registry is made in this same run: nothing to plan against yet
            return CheckResult({**news, "plan": UNKNOWN}, [])
        try:
            with _rest(login) as rest:
                changes = _plan(rest, news)
        except (ConnectionFailed, KafkaRequestFailed) as exc:
            return CheckResult({**news, "plan": {"": f"the registry at {login['url']} did not answer ({exc}); the "
                                                     f"subjects are planned when it does"}}, [])
        failures = [CheckFailure("", f"subject {c.resource}: {c.reason}") for c in changes
                    if c.action is Action.REFUSE]
        if news.get("protect"):
            failures.extend(CheckFailure("", (
                f"subject {c.resource}: {c.action} refused while the stack protects its objects (kraftform:protect, "
                f"on by default in prod): {c.reason}. Run once with `pulumi config set kraftform:protect false`, "
                f"or keep it in the specs")) for c in changes
                if c.safety is Safety.DESTRUCTIVE and c.action is not Action.REFUSE)
        return CheckResult({**news, "plan": _described(changes)}, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        keys = ("subjects", "topics", "protect")
        changed = [k for k in keys if _plain(olds.get(k)) != _plain(news.get(k))]
        if news.get("plan"):  # the live registry differs (or could not be asked): not "no changes"
            changed.append("plan")
        login = news.get("registry")
        if _unknown(login) or (olds.get("registry") or {}).get("url") != (login or {}).get("url"):
            changed.append("registry")
        return DiffResult(changes=bool(changed), replaces=[], delete_before_replace=True)

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult("subjects", self._reconcile(props))

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(self._reconcile(news))

    def _reconcile(self, props: dict[str, Any]) -> dict[str, Any]:
        """The CLI's apply: levels, versions and deletions (destructive ones only where the stack does not
        protect: `check` refused them otherwise), then the plan read back until it is empty."""
        subjects = _subjects(props)
        with _rest(props["registry"]) as rest:
            apply_subjects(rest, _plan(rest, props), not props.get("protect"), _progress)
            left = _plan(rest, props)
            if left:
                raise PlanRefusedError("the registry does not hold what the specs declare after the apply:\n" +
                                       "\n".join(f"  {k}: {v}" for k, v in _described(left).items()))
            writers = _writers(rest, subjects)
        return {**props, "plan": {}, "writers": writers}

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        """`pulumi destroy`: the subjects of the stack's topics deleted, where the registry still answers (the one
        the stack runs may be gone already, its subjects with its volume)."""
        try:
            with _rest(props["registry"]) as rest:
                apply_subjects(rest, _plan(rest, {**props, "subjects": {}}), True, _progress)
        except ConnectionFailed as exc:
            _progress(f"subjects: the registry did not answer ({exc}); nothing deleted")


class Subjects(pulumi.dynamic.Resource):
    """Every declared subject; `writers` each Avro value topic's registered schemas by id."""

    writers: pulumi.Output[dict[str, dict[str, str]]]

    def __init__(self, name: str, props: dict[str, Any], opts: pulumi.ResourceOptions) -> None:
        super().__init__(SubjectsProvider(), name, {
            **props, "registry": pulumi.Output.secret(props["registry"]), "plan": None, "writers": None},
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(additional_secret_outputs=["registry"])))
