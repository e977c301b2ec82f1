"""Validated spec sets kept by content: a hit only for the same files and the same code, never for invalid specs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kraftform.declared import load_specs
from kraftform.errors import SpecError
from kraftform.specset import cache
from kraftform.specset.files import spec_files
from kraftform.specset.model import SpecSet

from ...conftest import SpecsCopy, edit


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("KRAFTFORM_SPEC_CACHE", raising=False)


def _counting(specs: Path) -> tuple[list[int], Callable[[], SpecSet]]:
    """A validation of `specs` that counts its runs."""
    from kraftform.spark.checks import check_consumers
    from kraftform.specset import loader

    calls: list[int] = []

    def load() -> SpecSet:
        calls.append(1)
        return loader.load_specs(specs, more=(check_consumers,))

    return calls, load


def test_unchanged_specs_are_validated_once_and_an_edit_misses(specs_copy: SpecsCopy) -> None:
    specs = specs_copy()
    calls, load = _counting(specs)
    first = cache.cached(specs, spec_files(specs), load)
    again = cache.cached(specs, spec_files(specs), load)
    assert calls == [1] and again == first
    edit(specs / "topics/orders.yaml", "partitions: 12", "partitions: 24")
    changed = cache.cached(specs, spec_files(specs), load)
    assert calls == [1, 1] and changed != first


def test_an_invalid_spec_set_is_never_kept_and_reports_every_time(specs_copy: SpecsCopy) -> None:
    specs = specs_copy()
    edit(specs / "topics/orders.yaml", "partitions: 12", "partitions: twelve")
    for _ in range(2):
        with pytest.raises(SpecError):
            load_specs(specs)
    assert not list(cache.cache_dir().glob("*.pickle"))


def test_a_corrupt_entry_is_a_miss_and_is_replaced(specs_copy: SpecsCopy) -> None:
    specs = specs_copy()
    load_specs(specs)
    (entry,) = cache.cache_dir().glob("*.pickle")
    entry.write_bytes(b"not a pickle")
    assert load_specs(specs).cluster.name == "platform"
    assert entry.read_bytes() != b"not a pickle"


def test_the_key_follows_the_code_as_well_as_the_specs(specs_copy: SpecsCopy, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    specs = specs_copy()
    before = cache.key(specs, spec_files(specs))
    code = tmp_path / "code.py"
    code.write_text("x = 1\n")
    monkeypatch.setattr(cache, "_code_files", lambda: iter([code]))
    other = cache.key(specs, spec_files(specs))
    code.write_text("x = 22\n")
    assert len({before, other, cache.key(specs, spec_files(specs))}) == 3


def test_turned_off_it_validates_every_time(specs_copy: SpecsCopy, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KRAFTFORM_SPEC_CACHE", "0")
    specs = specs_copy()
    calls, load = _counting(specs)
    cache.cached(specs, spec_files(specs), load)
    cache.cached(specs, spec_files(specs), load)
    assert calls == [1, 1] and not cache.cache_dir().exists()


def test_an_entry_another_writer_put_there_is_never_unpickled(specs_copy: SpecsCopy, tmp_path: Path) -> None:
    """Unpickling runs code: an entry whose HMAC does not match (a pickle written without the cache's key, or one
    changed after it was written) is a miss, replaced by a validation, and what it would run never runs."""
    specs = specs_copy()
    load_specs(specs)
    (entry,) = cache.cache_dir().glob("*.pickle")
    ran = tmp_path / "ran"

    class Payload:
        def __reduce__(self) -> tuple[object, tuple[str]]:
            return (Path.touch, (str(ran),))

    import pickle

    for forged in (pickle.dumps(Payload()), entry.read_bytes()[:32] + pickle.dumps(Payload())):
        entry.write_bytes(forged)
        assert load_specs(specs).cluster.name == "platform"
        assert not ran.exists()
        assert entry.read_bytes() != forged  # replaced by an entry of its own
    assert oct((cache.cache_dir() / ".key").stat().st_mode & 0o777) == "0o600"
    pickle.loads(pickle.dumps(Payload()))  # the control: unpickled, the payload does run
    assert ran.exists()


def test_a_cache_directory_others_may_write_is_not_used(specs_copy: SpecsCopy) -> None:
    specs = specs_copy()
    directory = cache.cache_dir()
    directory.mkdir(parents=True)
    directory.chmod(0o777)
    calls, load = _counting(specs)
    cache.cached(specs, spec_files(specs), load)
    cache.cached(specs, spec_files(specs), load)
    assert calls == [1, 1] and not list(directory.glob("*.pickle"))
