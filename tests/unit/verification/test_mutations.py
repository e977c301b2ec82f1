from __future__ import annotations

from kraftform.verification.mutations import mutate, mutated_set, paths

BASE = {"topics.yaml": "topics:\n  - name: a.v1\n    partitions: 3\n", "users.yaml": "users: []\n"}


def test_the_same_seed_gives_the_same_set_and_another_seed_another() -> None:
    assert mutated_set(BASE, 7) == mutated_set(BASE, 7)
    assert len({str(mutated_set(BASE, seed)[0]) for seed in range(50)}) > 25


def test_every_set_changes_at_least_one_file_and_says_how() -> None:
    for seed in range(100):
        files, done = mutated_set(BASE, seed)
        assert 1 <= len(done) <= 3 and all(m.file in BASE for m in done)
        assert set(files) == set(BASE)


def test_paths_and_mutate() -> None:
    data = {"topics": [{"name": "a", "partitions": 3}]}
    assert ("topics", 0, "partitions") in paths(data)
    assert mutate(data, ("topics", 0, "partitions"), "replace", -1) == {"topics": [{"name": "a", "partitions": -1}]}
    assert mutate(data, ("topics", 0), "duplicate", None)["topics"][1] == {"name": "a", "partitions": -1}
    assert mutate({"a": 1}, (), "replace", 5) == 5
