"""Node work that survives a SIGKILL: `kraftform apply --state-dir` killed at random points of rolling restarts and
of a broker added and removed again, while an acks=all idempotent producer writes throughout. After each kill a
plain apply must converge (the plan empty after it); over the whole run no acknowledged record may be lost, no
partition may go offline (sampled every half second) and no replication throttle may be left. This is
`resilience.kill_trials` for the cluster's nodes.
"""

from __future__ import annotations

import random
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml
from confluent_kafka.admin import ConfigResource, ConfigSource, ResourceType

from kraftform.definitions.server_configs import THROTTLE_RATES
from kraftform.kafka.admin import Admin
from kraftform.specset.model import Profile
from kraftform.verification.durability import ProducerWatch, read_all
from kraftform.verification.killpoints import FINISHED, Killed, KillPoint, kill_at
from kraftform.verification.target import Target

Progress = Callable[[str], None]
#: A read-only broker setting (rendered into server.properties), so that a new value is a rolling restart.
ROLLED = "log.retention.check.interval.ms"
#: Where `apply` is in node work, from what it prints (a roll's steps, adds, moves and removals).
_STEPS = re.compile(r"^(\[\d+/\d+\] |adding |  \S+ is (a caught-up voter|registered) |partitions: |removing )")
_ROLL = re.compile(r"^\[\d+/(\d+)\] ")
PRODUCER = Profile("node-kills", replication_factor=3, topic={"min.insync.replicas": "2"},
                   producer={"acks": "all", "enable.idempotence": "true", "retries": "2147483647"})


@dataclass(frozen=True)
class NodeKill:
    trial: int
    change: str
    killed_after_s: float
    #: The last step the killed apply reported (or that it finished before the kill).
    reached: str
    converged: bool
    detail: str = ""


@dataclass
class NodeKills:
    trials: list[NodeKill] = field(default_factory=list)
    acked: int = 0
    lost: int = 0
    #: The most partitions without a leader seen at once during the run.
    offline_max: int = 0
    #: Brokers with a replication throttle after the last apply.
    throttled: tuple[str, ...] = ()
    seconds: float = 0.0

    @property
    def passed(self) -> bool:
        return (all(t.converged for t in self.trials) and not self.lost and not self.offline_max
                and not self.throttled)


def changes(cluster: Mapping[str, Any], count: int) -> list[tuple[str, dict[str, Any]]]:
    """`count` cluster sections in turn: a roll, a broker added, a roll, the broker removed, and so on; each a
    change from the one before it."""
    brokers = int(cluster["brokers"])
    out: list[tuple[str, dict[str, Any]]] = []
    for trial in range(1, count + 1):
        before = out[-1][1] if out else dict(cluster)
        settings = dict(before.get("broker_config") or {})
        if trial % 2:
            settings[ROLLED] = str(300_000 + 1_000 * trial)
            out.append((f"roll ({ROLLED}={settings[ROLLED]})", {**before, "broker_config": settings}))
        else:
            grown = int(before["brokers"]) == brokers
            out.append((f"brokers {before['brokers']} -> {brokers + 1 if grown else brokers}",
                        {**before, "brokers": brokers + 1 if grown else brokers}))
    return out


class _OfflineWatch:
    """Samples every partition's leader twice a second on a thread; the most without one at once."""

    def __init__(self, target: Target) -> None:
        self.target, self.most, self._stop = target, 0, threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            try:
                topics = self.target.admin().list_topics(timeout=5).topics.values()
            except Exception:  # a metadata request during a restart: the next sample counts
                continue
            self.most = max(self.most, sum(p.leader < 0 for t in topics for p in t.partitions.values()))

    def stop(self) -> int:
        self._stop.set()
        self._thread.join(timeout=10)
        return self.most


def _throttled(target: Target) -> tuple[str, ...]:
    """The brokers a throttle was left on. A broker that does not answer fails the check with Kafka's reason (a
    refused login), not a traceback (verify once ended on a bare TimeoutError here)."""
    admin = Admin(target.connection)
    left = []
    for broker in sorted(admin.metadata().brokers):  # one broker per request, as Kafka asks
        [future] = admin.client.describe_configs([ConfigResource(ResourceType.BROKER, str(broker))]).values()
        entries = admin.wait(future, f"read the throttles of broker {broker}", on=broker)
        if any(entries.get(k) is not None and entries[k].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
               for k in THROTTLE_RATES):
            left.append(str(broker))
    return tuple(left)


def node_point(where: float, share: float, expected: int) -> Callable[[Sequence[str]], KillPoint]:
    """The kill point `where` (in [0, 1)) of node work's progress. A roll announces its nodes (`[k/N] name: ...`,
    three lines each: waiting, restarting, back); other work is assumed to print `expected` lines (what the last
    whole apply of its kind printed). The last line is the latest point, killed at once, so the kill lands inside."""
    def point(events: Sequence[str]) -> KillPoint:
        first = next((i for i, line in enumerate(events) if _ROLL.match(line)), None)
        total = expected if first is None else first + 3 * int(_ROLL.match(events[first])[1])  # type: ignore[index]
        event = min(total - 1, int(where * total))
        return KillPoint(event, 0.0 if event >= total - 1 else share)
    return point


def node_kill_trials(target: Target, cluster: Mapping[str, Any], count: int, seed: int, progress: Progress,
                     per_change: int = 1) -> NodeKills:
    """`count` applies of node work SIGKILLed at random points of their own progress (killpoints.py),
    `per_change` in a row on one change (each one resuming what the last left, then killed in its turn; a change
    whose apply finished first takes no more and one more change is made), each change then applied and planned,
    the plan empty. The cluster is left as the last change made it: its callers' own, stopped next (its way back
    would be one more change, unkilled)."""
    if target.state_dir is None:
        raise ValueError("node kill trials need a cluster kraftform runs (its state directory)")
    started = time.monotonic()
    rng = random.Random(seed)
    specs = target.workdir / "node-specs"
    specs.mkdir(parents=True, exist_ok=True)
    state = str(target.state_dir)

    def write(section: Mapping[str, Any]) -> None:
        (specs / "cluster.yaml").write_text(yaml.safe_dump({"cluster": dict(section)}))

    def command(verb: str, *extra: str) -> list[str]:
        return [sys.executable, "-m", "kraftform", verb, str(specs), "--state-dir", state, *extra]

    def run(verb: str, name: str, *extra: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(command(verb, *extra), capture_output=True, text=True, timeout=1800, check=False)
        (target.workdir / "logs" / f"{name}.log").write_text(done.stdout + done.stderr)
        return done

    def killed_apply(name: str, point: Callable[[Sequence[str]], KillPoint]) -> Killed:
        return kill_at(command("apply", "--auto-approve", "--allow-destructive"), target.workdir / "logs" /
                       f"{name}.log", lambda line: bool(_STEPS.match(line)), point)

    topic = target.topic("node-kills")
    target.create_topic(topic, 6, target.replication_factor(PRODUCER), PRODUCER.topic)
    producer = ProducerWatch(target, topic, PRODUCER, 10_000_000, 200, "node-kills")
    offline = _OfflineWatch(target)
    result = NodeKills()
    # How many progress lines each kind of change prints, learnt as it goes (a roll says it: three a node).
    events = {"roll": 9, "brokers": 3}
    try:
        producer.wait_acked(200, 120)
        killed = 0
        for trial, (change, section) in enumerate(changes(cluster, 3 * count), 1):
            if killed >= count:
                break
            kind = change.split()[0]
            write(section)
            points: list[Killed] = []
            while len(points) < per_change and killed < count:
                where = rng.uniform(0.0, 1.0) / per_change
                kill = killed_apply(f"node-{trial}-killed-{len(points) + 1}",
                                    node_point(where, rng.random(), events[kind]))
                points.append(kill)
                if kill.reached == FINISHED:
                    if len(points) == 1:  # a whole change's events, not a resumed one's
                        events[kind] = max(1, len(kill.events))
                    break
                killed += 1
            again = run("apply", f"node-{trial}-apply", "--auto-approve", "--allow-destructive")
            planned = run("plan", f"node-{trial}-plan")
            converged = again.returncode == 0 and planned.returncode == 0
            detail = "" if converged else (again.stdout + again.stderr + planned.stdout)[-600:]
            for kill in points:
                result.trials.append(NodeKill(trial, change, kill.after_s, kill.reached, converged, detail))
            progress(f"  node trial {trial} ({change}): killed after "
                     + ", then ".join(f"{kill.after_s:.1f} s ({kill.reached})" for kill in points)
                     + f"; {'converged' if converged else 'DID NOT converge'}")
        result.throttled = _throttled(target)
    finally:
        result.offline_max = offline.stop()
        if producer.process.poll() is None:
            producer.process.terminate()
        acked = set(producer.finish(timeout=60).acked)
    read = set(read_all(target, topic, PRODUCER, target.end_offsets(topic, 6), "node-kills"))
    result.acked, result.lost = len(acked), len(acked - read)
    result.seconds = time.monotonic() - started
    return result
