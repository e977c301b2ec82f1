"""A consumer's job as one file, what `kraftform consumers run --job FILE` runs in a container. Pure.

A container that carried the whole spec directory changed with every spec edit, so `pulumi up` replaced every
consumer when one topic grew or another consumer's query changed. The manifest holds only what the job uses:
the consumer's definition, its settings already resolved against its profile, its topics' partitions and the
cluster's Spark master, its user's SASL mechanism, and the state reset its deployment allowed. A change
elsewhere in the specs leaves the text, and so the container, as it is; a change that does reach the job (a
partition count that changes its shuffle partitions, say) changes the text and redeploys that consumer alone.

`reset_to` is how a deployment allows a state reset without a second redeploy to take the permission back:
it names the one state shape (by digest) the job may start a new checkpoint for. Once the checkpoint has that
shape the permission does nothing, and it is void for any other shape a later edit makes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from kraftform.errors import UsageError
from kraftform.spark.checkpoint import StateShape, state_shape
from kraftform.spark.query import QueryFacts
from kraftform.spark.settings import JobSettings, Trigger, job_settings
from kraftform.specset.model import ConsumerSpec, SinkSpec, SpecSet, ValueFormat, Watermark

#: Written into every manifest; a reader of another format says so instead of misreading it.
FORMAT = 1
#: ConsumerSpec fields the job does not use: where it was written (files the container does not have) and its
#: description. A change to them must not redeploy it.
_UNUSED = ("location", "query_location", "description")


def shape_digest(shape: StateShape) -> str:
    """A state shape's short, stable name: what `reset_to` holds."""
    return hashlib.sha256(json.dumps(asdict(shape), sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class JobManifest:
    consumer: ConsumerSpec
    settings: JobSettings
    #: The consumer's user's SASL mechanism (its login comes from the client config beside the manifest).
    mechanism: str
    #: The digest of the state shape a new checkpoint may be started for ("" when none may).
    reset_to: str = ""

    @property
    def shape(self) -> StateShape:
        return state_shape(self.consumer, self.settings.facts)

    @property
    def reset_allowed(self) -> bool:
        return bool(self.reset_to) and self.reset_to == shape_digest(self.shape)


def manifest_text(manifest: JobManifest) -> str:
    """Sorted, indented JSON: the same job is the same text, so the container's inputs stay equal."""
    consumer = {k: v for k, v in asdict(manifest.consumer).items() if k not in _UNUSED}
    return json.dumps({"format": FORMAT, "consumer": consumer, "settings": asdict(manifest.settings),
                       "mechanism": manifest.mechanism, "reset_to": manifest.reset_to},
                      sort_keys=True, indent=1) + "\n"


def read_manifest(text: str, where: str) -> JobManifest:
    """The manifest in `text` (read from `where`); a UsageError naming the file when it is not one."""
    try:
        raw = json.loads(text)
        if raw.get("format") != FORMAT:
            raise UsageError(f"{where}: a job manifest of format {raw.get('format')!r}; this kraftform reads "
                             f"format {FORMAT} (deploy the consumer with the same kraftform as its image)")
        return JobManifest(_consumer(raw["consumer"]), _settings(raw["settings"]), raw["mechanism"],
                           raw.get("reset_to") or "")
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"{where}: not a kraftform job manifest ({type(exc).__name__}: {exc})") from None


def _consumer(d: dict[str, Any]) -> ConsumerSpec:
    watermark = d.get("watermark")
    return ConsumerSpec(**{**d, "topics": tuple(d["topics"]), "sink": SinkSpec(**d["sink"]),
                           "value": ValueFormat(**d["value"]), "options": dict(d["options"]),
                           "watermark": Watermark(**watermark) if watermark else None})


def _settings(d: dict[str, Any]) -> JobSettings:
    facts: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in d["facts"].items()}
    return JobSettings(**{**d, "trigger": Trigger(**d["trigger"]), "facts": QueryFacts(**facts),
                          "notes": tuple(d["notes"]), "avro_writers": dict(d.get("avro_writers") or {})})


def consumer_manifest(consumer: ConsumerSpec, specs: SpecSet, allow_reset: bool = False,
                      avro_writers: Mapping[str, str] | None = None) -> JobManifest:
    """The consumer's job as the specs declare it; with `allow_reset`, allowed to start a new checkpoint for
    its declared state shape (`kraftform consumers up --allow-destructive`); an Avro consumer's with the writer
    schemas the registry had when it was deployed."""
    user = next(u for u in specs.users if u.name == consumer.user)
    settings = replace(job_settings(consumer, specs), avro_writers=dict(avro_writers or {}))
    manifest = JobManifest(consumer, settings, user.mechanism)
    return replace(manifest, reset_to=shape_digest(manifest.shape)) if allow_reset else manifest
