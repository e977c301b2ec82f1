"""A consumer's job manifest: everything its container runs, and nothing of the specs it does not use."""

from __future__ import annotations

from dataclasses import replace

import pytest

from kraftform.declared import load_specs
from kraftform.errors import UsageError
from kraftform.spark.manifest import consumer_manifest, manifest_text, read_manifest, shape_digest
from kraftform.spark.settings import job_settings

from ...conftest import EXAMPLE_SPECS


@pytest.mark.parametrize("name", ["fraud-scoring", "clickstream-sessionizer"])
def test_a_manifest_reads_back_as_the_job_the_specs_declare(name: str) -> None:
    specs = load_specs(EXAMPLE_SPECS)
    consumer = next(c for c in specs.consumers if c.name == name)
    manifest = consumer_manifest(consumer, specs)
    back = read_manifest(manifest_text(manifest), "job.json")
    assert back.settings == job_settings(consumer, specs)
    assert back.consumer == replace(consumer, description="", location=back.consumer.location,
                                    query_location=back.consumer.query_location)
    assert back.mechanism == "SCRAM-SHA-512" and back.shape == manifest.shape
    assert manifest_text(back) == manifest_text(manifest)  # the same job is the same text


def test_a_reset_is_allowed_for_the_declared_shape_only() -> None:
    specs = load_specs(EXAMPLE_SPECS)
    sessionizer = next(c for c in specs.consumers if c.name == "clickstream-sessionizer")
    assert not consumer_manifest(sessionizer, specs).reset_allowed
    allowed = consumer_manifest(sessionizer, specs, allow_reset=True)
    assert allowed.reset_allowed and allowed.reset_to == shape_digest(allowed.shape)
    # A later edit that changes the shape again is not covered by the earlier permission.
    assert sessionizer.query is not None
    regrouped = replace(sessionizer, query=sessionizer.query.replace(
        "GROUP BY user_id,", "GROUP BY user_id, device,").replace("SELECT user_id,", "SELECT user_id, device,"))
    later = replace(consumer_manifest(regrouped, replace(specs, consumers=(regrouped,))), reset_to=allowed.reset_to)
    assert not later.reset_allowed


@pytest.mark.parametrize(("text", "says"), [
    ("{", "not a kraftform job manifest"),
    ('{"format": 99}', "a job manifest of format 99"),
    ('{"format": 1, "consumer": {}}', "not a kraftform job manifest (KeyError"),
])
def test_what_is_not_a_manifest_is_named(text: str, says: str) -> None:
    with pytest.raises(UsageError, match=r"^/etc/kraftform/job\.json: ") as caught:
        read_manifest(text, "/etc/kraftform/job.json")
    assert says in str(caught.value)
