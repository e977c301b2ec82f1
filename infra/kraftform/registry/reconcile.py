"""The declared subjects against a live schema registry: observe, ask the registry's own compatibility checks,
plan (`plan.subjects`), apply, and read back until the registry holds what the specs declare."""

from __future__ import annotations

from collections.abc import Callable

from kraftform.errors import KafkaRequestFailed, PlanRefusedError, UsageError
from kraftform.plan.changes import Action, Change, Kind, Safety, SubjectWork
from kraftform.plan.subjects import CheckAnswer, Gate, SubjectState, same_schema, subject_changes, subject_topic
from kraftform.registry.rest import NotFound, RegistryRest
from kraftform.specset.model import ConsumerSpec, SpecSet, SubjectSpec

Progress = Callable[[str], None]


def observe_subjects(rest: RegistryRest, declared: tuple[SubjectSpec, ...],
                     owns_topic: Callable[[str], bool]) -> dict[str, SubjectState]:
    """The subjects the plan speaks about: the declared ones the registry has, and those of owned topics."""
    wanted = {s.name: s for s in declared}
    out: dict[str, SubjectState] = {}
    for name in rest.subjects():
        topic = subject_topic(name)
        if name not in wanted and (topic is None or not owns_topic(topic)):
            continue
        try:
            versions = tuple(rest.versions(name))
            latest = rest.version(name)
        except NotFound:  # deleted between the listing and the reading
            continue
        spec = wanted.get(name)
        declared_version = None
        if spec is not None and not same_schema(latest.schema, spec.schema):
            declared_version = rest.lookup(name, spec.schema, spec.schema_type)
        out[name] = SubjectState(name, versions, latest.schema, latest.schema_type, rest.compatibility(name),
                                 declared_version)
    return out


def plan_subjects(rest: RegistryRest, subjects: tuple[SubjectSpec, ...], owns_topic: Callable[[str], bool],
                  gate: Gate) -> list[Change]:
    """The changes to the declared `subjects`, each new version checked by the registry itself and by `gate` (what
    the declared consumers read: `declared.consumer_gate`)."""
    observed = observe_subjects(rest, subjects, owns_topic)
    checks: dict[str, CheckAnswer] = {}
    for spec in subjects:
        state = observed.get(spec.name)
        if state is None or state.declared_version is not None or same_schema(state.latest_schema, spec.schema):
            continue
        checks[spec.name] = rest.check(spec.name, spec.schema, spec.schema_type)
    return subject_changes(subjects, observed, checks, owns_topic, gate)


def check_subjects(changes: list[Change], allow_destructive: bool) -> None:
    """Raise before anything is sent (to the registry or the cluster) while a subject change is refused, or
    destructive without `allow_destructive`."""
    subjects = [c for c in changes if c.kind is Kind.SUBJECT]
    refused = [c for c in subjects if c.action is Action.REFUSE]
    if refused:
        raise PlanRefusedError("the plan has refused schema change(s); nothing was applied:\n" + "\n".join(
            f"  {c.resource}: {c.reason}" for c in refused))
    destructive = [c for c in subjects if c.safety is Safety.DESTRUCTIVE]
    if destructive and not allow_destructive:
        raise PlanRefusedError(f"{len(destructive)} destructive schema change(s) need --allow-destructive; nothing "
                               f"was applied:\n" + "\n".join(f"  {c.action} {c.resource}: {c.reason}"
                                                              for c in destructive))


def apply_subjects(rest: RegistryRest, changes: list[Change], allow_destructive: bool, progress: Progress) -> None:
    """Each subject's level first (a version is then checked under the declared one), then its version or its
    deletions. Nothing is sent while a change is refused or destructive without `allow_destructive`."""
    check_subjects(changes, allow_destructive)
    ordered = sorted((c for c in changes if c.kind is Kind.SUBJECT),
                     key=lambda c: (c.resource, 0 if c.key == "compatibility" else 1))
    for change in ordered:
        work = change.payload
        assert isinstance(work, SubjectWork)
        if work.compatibility is not None and change.action is Action.UPDATE:
            rest.set_compatibility(change.resource, work.compatibility)
        if work.schema is not None:
            try:
                schema_id = rest.register(change.resource, work.schema, work.schema_type)
            except KafkaRequestFailed as exc:
                raise KafkaRequestFailed(f"{change.resource}: {exc}") from None
            if change.action is Action.CREATE and work.compatibility is not None:
                rest.set_compatibility(change.resource, work.compatibility)
            progress(f"registered {change.resource} (schema id {schema_id})")
        if work.delete:
            rest.delete_subject(change.resource)
            progress(f"deleted subject {change.resource}")


def writer_schemas(rest: RegistryRest, specs: SpecSet, consumer: ConsumerSpec) -> dict[str, str]:
    """Every registered version of an Avro consumer's topics' value subjects, by schema id: what its job decodes
    records with (the reader schema is the declared one). Refused when a subject has no version yet: then no
    producer can have written a record the job could read, and the cause is an apply not yet run."""
    writers: dict[str, str] = {}
    for subject in (s for s in specs.subjects if s.part == "value" and s.topic in consumer.topics):
        try:
            numbers = rest.versions(subject.name)
        except NotFound:
            numbers = []
        if not numbers:
            raise UsageError(f"consumer {consumer.name!r} reads Avro from topic {subject.topic!r}, and subject "
                             f"{subject.name!r} has no version in the registry: run `kraftform apply` first")
        writers.update(registered_schemas(rest, subject.name, numbers))
    return writers


def registered_schemas(rest: RegistryRest, subject: str, numbers: list[int]) -> dict[str, str]:
    """The schemas of a subject's registered versions `numbers`, by schema id: what a record's header names."""
    schemas: dict[str, str] = {}
    for number in numbers:
        version = rest.version(subject, number)
        schemas[str(version.id)] = version.schema
    return schemas


def declared_schema_id(rest: RegistryRest, specs: SpecSet, consumer: ConsumerSpec) -> int:
    """The registry's id of the value schema an Avro consumer's topics declare: what a producer of its records
    writes into the Confluent header. Refused when the registry has no version with that schema yet."""
    subject = next(s for s in specs.subjects if s.part == "value" and s.topic in consumer.topics)
    version = rest.lookup(subject.name, subject.schema, subject.schema_type)
    if version is None:
        raise UsageError(f"subject {subject.name!r} has no version with the declared schema ({subject.file}): run "
                         f"`kraftform apply` first")
    return rest.version(subject.name, version).id
