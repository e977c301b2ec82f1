"""What a roll says about a node that did not come back: only its current process's part of the log counts."""

import socket
import time
from pathlib import Path

from kraftform.cluster.topology import CLIENT_PORT
from kraftform.runtime.nodes.local import (
    START_MARKER,
    answers_in,
    claim_loopback_base,
    last_error_line,
    loopback_base,
    release_loopback_base,
)

EARLIER = ("[2026-11-24 14:00:00,000] ERROR an earlier process's failure (kafka.Kafka$)\n"
           "[2026-11-24 14:06:49,092] INFO App info kafka.server for 3 unregistered\n")


def test_the_last_error_of_the_current_process_with_its_exception_line() -> None:
    log = (f"{EARLIER}{START_MARKER} broker-2 at 2026-11-24 14:07:00\n"
           "[2026-11-24 14:07:03,000] ERROR Exiting Kafka due to fatal exception (kafka.Kafka$)\n"
           "java.lang.IllegalArgumentException: requirement failed\n"
           "[2026-11-24 14:07:03,100] INFO shut down completed\n")
    assert last_error_line(log) == ("[2026-11-24 14:07:03,000] ERROR Exiting Kafka due to fatal exception "
                                    "(kafka.Kafka$) / java.lang.IllegalArgumentException: requirement failed")


def test_a_process_that_wrote_nothing_is_not_blamed_on_its_predecessor() -> None:
    assert last_error_line(f"{EARLIER}{START_MARKER} broker-2 at 2026-11-24 14:07:00\n") == \
        "(its process wrote nothing to its log)"


def test_without_an_error_the_last_line_and_without_a_marker_the_whole_log() -> None:
    assert last_error_line(f"{START_MARKER} b\n[x] INFO started\n") == "[x] INFO started"
    assert last_error_line(EARLIER).startswith("[2026-11-24 14:00:00,000] ERROR an earlier")
    assert last_error_line("") == "(its log is empty)"


def _silent(near: Path) -> Path:
    """A state directory whose derived range nothing listens in: clusters of other runs on this machine may hold
    any range, and the one this test derives must be free for it to mean anything (a verify cluster left there
    once made the bind below fail)."""
    return next(candidate for candidate in (near.with_name(f"{near.name}-{i}") for i in range(1000))
                if not answers_in(loopback_base(candidate)))


def test_a_new_cluster_skips_a_loopback_range_where_another_cluster_answers(tmp_path: Path) -> None:
    # Two state directories can derive the same range; the second cluster made there could not bind.
    claims = tmp_path / "claims"
    state = _silent(tmp_path / "state")
    derived = loopback_base(state)
    with socket.socket() as other:  # another cluster's first broker in that range
        other.bind((f"{derived}0.1", CLIENT_PORT))
        other.listen()
        claimed = claim_loopback_base(state, claims)
    assert claimed != derived and claimed.startswith("127.")
    assert loopback_base(state) == claimed  # recorded: every later command finds the same addresses
    free = _silent(tmp_path / "free")
    derived_free = loopback_base(free)  # nothing listens there and nobody claimed it: the derived range is kept
    assert claim_loopback_base(free, tmp_path / "other-claims") == derived_free
    assert (free / "loopback").read_text() == f"{derived_free}\n"


def _deriving(base: str, near: Path) -> Path:
    """A state directory whose path derives the range `base` (one in 200 does)."""
    return next(candidate for candidate in (near.with_name(f"{near.name}-{i}") for i in range(100_000))
                if loopback_base(candidate) == base)


def test_a_range_another_cluster_claimed_is_skipped_before_it_listens_and_free_once_it_is_purged(
        tmp_path: Path) -> None:
    claims = tmp_path / "claims"
    first = tmp_path / "first"
    held = claim_loopback_base(first, claims)
    # Made at the same moment, deriving the same range: nothing listens there yet, the claim alone keeps them apart.
    assert claim_loopback_base(_deriving(held, tmp_path / "second"), claims) != held
    assert claim_loopback_base(first, claims) == held  # its own claim is no obstacle to itself
    release_loopback_base(first, claims)
    assert claim_loopback_base(_deriving(held, tmp_path / "third"), claims) == held


def test_a_node_is_gone_only_once_its_process_has_released_everything(tmp_path: Path) -> None:
    """`_gone`, which a stop waits on before the node starts again on its ports: a running process is not gone, a
    reaped child and a pid nobody holds are; a process running something else under a recycled pid is too."""
    import subprocess
    import sys

    from kraftform.runtime.nodes.deployment import NodeRecord
    from kraftform.runtime.nodes.local import LocalRuntime

    runtime = LocalRuntime(tmp_path)
    node_dir = runtime.node_dir("n-1")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", str(node_dir), "kafka.Kafka"])
    runtime._children[proc.pid] = proc
    record = NodeRecord("n-1", 1, ["broker"], handle=str(proc.pid))
    try:
        assert runtime._alive(record) and not runtime._gone(record)
    finally:
        proc.kill()
    proc.wait(10)
    assert runtime._gone(record)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])  # not the node's command line
    try:
        # Until the fork has exec'd, its command line is this Python's or, mid-exec, empty (read as "exiting").
        deadline = time.monotonic() + 10
        while b"time.sleep" not in Path(f"/proc/{other.pid}/cmdline").read_bytes() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert runtime._gone(NodeRecord("n-1", 1, ["broker"], handle=str(other.pid)))
    finally:
        other.kill()
        other.wait(10)
    assert runtime._gone(NodeRecord("n-1", 1, ["broker"], handle="")) and runtime._gone(
        NodeRecord("n-1", 1, ["broker"], handle=str(2**22 + 7)))


def test_a_node_process_no_record_names_is_found_by_its_directory_and_stopped_not_started_twice(
        tmp_path: Path) -> None:
    """A kill between a node's launch and its record leaves a JVM the state does not name: the runtime finds it by the
    node's files in its command line, so `process_id` reports it (a resumed apply waits for it rather than start a
    second JVM on the same data) and a stop kills it (a purge never deletes data under a running node)."""
    import signal
    import subprocess
    import sys

    from kraftform.runtime.nodes import deployment as dep
    from kraftform.runtime.nodes.local import LocalRuntime

    runtime = LocalRuntime(tmp_path)
    dep.save(runtime.state_dir, dep.Deployment("local", "n", "127.0.0.1:9092", 1, "4.4.0", [
        dep.NodeRecord("n-broker-1", 1, ["broker"], handle=""), dep.NodeRecord("n-broker-10", 10, ["broker"])]))
    properties = runtime.node_dir("n-broker-1") / "config" / "server.properties"
    orphan = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "kafka.Kafka", str(properties)])
    try:
        deadline = time.monotonic() + 10
        while b"kafka.Kafka" not in Path(f"/proc/{orphan.pid}/cmdline").read_bytes() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert runtime.process_id("n-broker-1") == str(orphan.pid)
        assert dep.load(runtime.state_dir).node("n-broker-1").handle == str(orphan.pid)  # adopted in the state too
        assert runtime.process_id("n-broker-10") == ""  # broker-1's files are not broker-10's
        runtime.kill_node("n-broker-1", signal.SIGKILL)
        assert orphan.wait(10) == -signal.SIGKILL
        assert runtime.process_id("n-broker-1") == ""
    finally:
        orphan.kill()
        orphan.wait(10)
