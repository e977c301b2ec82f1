"""The killed-apply trials' spec sets are valid specs, and never ask Kafka for what it cannot do."""

from __future__ import annotations

from pathlib import Path

import yaml

from kraftform.declared import load_specs
from kraftform.verification import specsets

from ...conftest import EXAMPLE_SPECS


def _write(root: Path, sections: dict[str, list[dict[str, object]]]) -> None:
    cluster = yaml.safe_load((EXAMPLE_SPECS / "cluster.yaml").read_text())["cluster"]
    cluster.pop("conventions", None)
    cluster["managed_scope"] = {"topic_prefixes": ["verify-x."]}
    root.mkdir(parents=True, exist_ok=True)
    (root / "cluster.yaml").write_text(yaml.safe_dump({"cluster": cluster}))
    for name, items in sections.items():
        (root / f"{name}.yaml").write_text(yaml.safe_dump({name: items}))


def test_every_trial_is_a_valid_spec_set_with_every_kind_of_resource(tmp_path: Path) -> None:
    for trial in range(5):
        sections = specsets.trial_sections("verify-x.", "verify-x", 3, trial, seed=1)
        _write(tmp_path / str(trial), sections)
        specs = load_specs(tmp_path / str(trial))
        assert specs.topics and specs.users and specs.acls and specs.quotas
        declared = {u.name for u in specs.users} | {p.name.removeprefix("User:") for p in specs.principals}
        assert declared == {specsets.user_name("verify-x", j) for j in range(specsets.USERS)}


def test_partitions_and_replication_never_change_between_trials() -> None:
    shapes: dict[str, tuple[object, object]] = {}
    changed_sets = set()
    for trial in range(20):
        topics = specsets.trial_sections("verify-x.", "verify-x", 3, trial, seed=1)["topics"]
        changed_sets.add(frozenset(t["name"] for t in topics))
        for t in topics:
            assert shapes.setdefault(t["name"], (t["partitions"], t["replication_factor"])) == \
                (t["partitions"], t["replication_factor"])
    assert len(changed_sets) == 20


def test_the_empty_set_declares_every_user_and_nothing_else(tmp_path: Path) -> None:
    _write(tmp_path, specsets.empty_sections("verify-x"))
    specs = load_specs(tmp_path)
    assert not specs.topics and not specs.users and len(specs.principals) == specsets.USERS
