"""Each profile's producer and consumer speed, measured with Kafka's ProducerPerformance and
ConsumerPerformance on the same cluster in one run.

Per profile, each run into a topic of its own with the profile's topic settings and replication: a paced
ProducerPerformance run at a fixed rate well below saturation (the latency a live stream sees), a
saturated one (as fast as the producer goes: records/s, MB/s, and the latency of a full pipe), and
ConsumerPerformance reading the saturated run's records with the profile's consumer settings. Records are
1 KB JSON events, so compression sees data like a user's, not the tool's random letters. The order of the
runs is the caller's (`kraftform verify` runs every paced run first, then the saturated ones twice, in
opposite orders, so no profile is favoured by going first or last).
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

from kraftform.errors import KafkaRequestFailed
from kraftform.runtime.nodes.tools import CONSUMER_PERFORMANCE, MEASURING_JAVA_OPTIONS, PRODUCER_PERFORMANCE
from kraftform.specset.model import Profile
from kraftform.verification.target import Target
from kraftform.verification.toolout import ConsumerRun, ProducerRun, consumer_summary, producer_summary

RECORD_BYTES = 1024
#: Free text of an event (a search, a review): words from a small vocabulary compress like prose does.
WORDS = ("the", "a", "and", "of", "to", "in", "is", "for", "on", "with", "order", "delivery", "price", "great",
         "quality", "size", "colour", "fast", "shipping", "return", "refund", "account", "password", "login",
         "search", "red", "blue", "shoes", "jacket", "phone", "case", "charger", "cable", "laptop", "bag",
         "small", "large", "cheap", "premium", "discount", "coupon", "gift", "card", "payment", "failed",
         "accepted", "pending", "warehouse", "paris", "lyon", "berlin", "madrid", "customer", "support")
PARTITIONS = 3
TOOL_OWNED = ("key.serializer", "value.serializer", "group.id", "bootstrap.servers")


def payload_file(path: Path, count: int = 2000, seed: int = 7) -> Path:
    """`count` distinct click events as JSON, each padded to exactly RECORD_BYTES bytes."""
    rng = random.Random(seed)
    pages = ["/", "/search", "/product/{}", "/cart", "/checkout", "/account/orders", "/help/{}"]
    agents = ["Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36",
              "Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148",
              "Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:133.0) Gecko/20100101 Firefox/133.0"]
    lines = []
    for i in range(count):
        event = {
            "event_id": f"{rng.getrandbits(64):016x}-{i:06d}", "user_id": f"u{rng.randrange(50_000):06d}",
            "session_id": f"s{rng.getrandbits(40):010x}", "ts": 1_795_000_000_000 + i * 37,
            "page": rng.choice(pages).format(rng.randrange(10_000)), "referrer": rng.choice(["", "/", "/search"]),
            "country": rng.choice(["FR", "DE", "US", "BR", "JP", "IN", "NG"]), "agent": rng.choice(agents),
            "amount": round(rng.random() * 500, 2),
            "items": [rng.randrange(10_000) for _ in range(rng.randrange(1, 6))],
        }
        text = json.dumps(event, separators=(",", ":"))
        room = RECORD_BYTES - len(text) - len(',"text":""')
        words = " ".join(rng.choice(WORDS) for _ in range(room))[:room]
        lines.append(text[:-1] + ',"text":"' + words + '"}')
    path.write_text("\n".join(lines) + "\n")
    return path


def _run(target: Target, main_class: str, args: list[str], name: str, timeout: float) -> str:
    code, out = target.run_tool(main_class, args, name, timeout, java_options=MEASURING_JAVA_OPTIONS)
    if code != 0:
        stderr = (target.workdir / "logs" / f"{name}.stderr").read_text()[-1500:]
        raise KafkaRequestFailed(f"{main_class.rsplit('.', 1)[-1]} failed (exit {code}):\n{stderr or out[-1500:]}")
    return out


def wait_quiet(timeout: float = 180, below: float | None = None) -> float:
    """Write dirty pages and wait until the 1-minute load average is at most `below` (the core count by default;
    up to `timeout` s): measured right after a test suite, this machine's leftover writeback and load set every
    latency."""
    start = time.monotonic()
    os.sync()
    limit = below if below is not None else os.cpu_count() or 1
    while os.getloadavg()[0] > limit and time.monotonic() - start < timeout:
        time.sleep(5)
    return time.monotonic() - start


def cpu_busy(window_s: float = 5.0) -> float | None:
    """The share of every core's time spent working (not idle, not waiting on disk) over `window_s`, from
    /proc/stat; None where there is none. Unlike the load average, which lags a minute and counts a process
    blocked on I/O as load, this is now."""
    def sample() -> tuple[int, int] | None:
        try:
            fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        except (OSError, ValueError):
            return None
        return sum(fields[3:5]), sum(fields)  # idle + iowait, all

    first = sample()
    time.sleep(window_s)
    second = sample()
    if first is None or second is None or second[1] == first[1]:
        return None
    return 1 - (second[0] - first[0]) / (second[1] - first[1])


def wait_idle(timeout: float = 120, busy_below: float = 0.3) -> tuple[float, float | None]:
    """Write dirty pages and wait until the cores are at most `busy_below` busy over 5 s (up to `timeout` s):
    measured right after a test suite, its leftover writeback and teardown set every latency. Returns the wait
    and the last busy share measured."""
    start = time.monotonic()
    os.sync()
    busy = cpu_busy()
    while busy is not None and busy > busy_below and time.monotonic() - start < timeout:
        busy = cpu_busy()
    return time.monotonic() - start, busy


def produce(target: Target, profile: Profile, label: str, count: int, rate: int, payload: Path,
            warmup: float = 0.1) -> ProducerRun:
    """One ProducerPerformance run with the profile's producer settings into a new topic of the profile's
    replication and topic settings; `rate` -1 is as fast as the producer goes. The first `warmup` share of
    the records is left out of the figures (each run is a new JVM: its first seconds measure the JIT and the
    connections, not the profile). Returns once the topic's
    replicas are in sync again and this machine's dirty pages are written, so the next run starts on a
    cluster that is not still finishing this one."""
    topic = target.topic(f"perf-{profile.name}-{label}")
    target.create_topic(topic, PARTITIONS, target.replication_factor(profile), profile.topic)
    config = target.client_config(f"perf-{profile.name}-producer", profile.producer, leave_out=TOOL_OWNED)
    out = _run(target, PRODUCER_PERFORMANCE, [
        "--topic", topic, "--num-records", str(count), "--throughput", str(rate), "--payload-file",
        str(payload), "--warmup-records", str(int(count * warmup)), "--command-config", str(config)],
        f"perf-{profile.name}-{label}", timeout=900)
    target.wait_in_sync(topic)
    os.sync()
    return producer_summary(out)


def consume(target: Target, profile: Profile, label: str, count: int) -> ConsumerRun:
    """ConsumerPerformance reading `count` records of the `label` run with the profile's consumer settings."""
    config = target.client_config(f"perf-{profile.name}-consumer", profile.consumer, leave_out=TOOL_OWNED)
    out = _run(target, CONSUMER_PERFORMANCE, [
        "--topic", target.topic(f"perf-{profile.name}-{label}"), "--num-records", str(count),
        "--group", f"kraftform-verify-{target.run_id}-perf-{profile.name}-{label}", "--timeout", "60000",
        "--command-config", str(config)], f"perf-{profile.name}-{label}-consumer", timeout=900)
    return consumer_summary(out)
