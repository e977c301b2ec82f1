"""The cluster a benchmark runs against."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kraftform.runtime import get_runtime
from kraftform.runtime.nodes.deployment import STATE_FILE
from kraftform.specset.model import ClusterSpec


@contextmanager
def bench_cluster(spec: ClusterSpec, state_dir: Path) -> Iterator[Path]:
    """A secure local cluster for one benchmark run: the one already in `state_dir` (left running), or a new
    one, purged when the run ends."""
    runtime = get_runtime("local", state_dir)
    started_here = not (state_dir / STATE_FILE).is_file()
    runtime.up(spec, timeout=300)
    try:
        yield state_dir
    finally:
        if started_here:
            runtime.down(purge=True)
