"""Client quotas through kafka-python's protocol classes: confluent-kafka has no client-quota API and
kafka-python's admin client exposes none either, but it ships the DescribeClientQuotas and
AlterClientQuotas messages; one request each reads or changes every entity at once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kraftform.errors import KafkaRequestFailed
from kraftform.specset.model import DEFAULT_ENTITY, QuotaEntity

#: kraftform's entity fields <-> Kafka's entity types.
_TYPES = {"user": "user", "client_id": "client-id"}


def _send(client: Any, request: Any) -> Any:
    return client._manager.run(client._manager.send, request)


def _entity(parts: list[Any]) -> QuotaEntity:
    fields: dict[str, str | None] = {"user": None, "client_id": None}
    for part in parts:
        field = "user" if part.entity_type == "user" else "client_id"
        fields[field] = DEFAULT_ENTITY if part.entity_name is None else part.entity_name
    return QuotaEntity(**fields)


def describe_quotas(client: Any) -> dict[QuotaEntity, dict[str, float]]:
    """Every quota entity on the cluster with its values, from one request."""
    from kraftform.kafka.kafka_python import DescribeClientQuotasRequest, for_code  # kafka-python: when used

    response = _send(client, DescribeClientQuotasRequest(components=[], strict=False))
    if response.error_code:
        raise KafkaRequestFailed(f"DescribeClientQuotas failed: {for_code(response.error_code).__name__}: "
                                 f"{response.error_message}")
    return {_entity(e.entity): {v.key: float(v.value) for v in e.values} for e in response.entries or ()}


def alter_quotas(client: Any, changes: Mapping[QuotaEntity, Mapping[str, float | None]]) -> None:
    """Set (a value) or remove (None) quota keys, for all entities in one request."""
    from kraftform.kafka.kafka_python import AlterClientQuotasRequest, for_code

    entry, entity_data, op = (AlterClientQuotasRequest.EntryData, AlterClientQuotasRequest.EntryData.EntityData,
                              AlterClientQuotasRequest.EntryData.OpData)
    entries = []
    for entity, values in changes.items():
        parts = [entity_data(entity_type=_TYPES[f], entity_name=None if name == DEFAULT_ENTITY else name)
                 for f, name in (("user", entity.user), ("client_id", entity.client_id)) if name is not None]
        ops = [op(key=k, value=0.0 if v is None else float(v), remove=v is None) for k, v in sorted(values.items())]
        entries.append(entry(entity=parts, ops=ops))
    response = _send(client, AlterClientQuotasRequest(entries=entries, validate_only=False))
    failed = [f"{_entity(e.entity).describe()}: {for_code(e.error_code).__name__} {e.error_message or ''}".strip()
              for e in response.entries if e.error_code]
    if failed:
        raise KafkaRequestFailed("AlterClientQuotas failed for " + "; ".join(failed))
