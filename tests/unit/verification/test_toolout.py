"""The output formats of Kafka 4.3.1's tools, as captured from real runs against a kraftform cluster."""

from __future__ import annotations

import pytest

from kraftform.errors import KafkaRequestFailed
from kraftform.verification.toolout import ProducerLog, consumed_values, consumer_summary, events, producer_summary

PRODUCER_LINES = """\
{"timestamp":1795447911642,"name":"startup_complete"}
{"timestamp":1795447912528,"name":"producer_send_success","key":null,"value":"0","offset":0,"topic":"t","partition":0}
{"timestamp":1795447912534,"name":"producer_send_success","key":null,"value":"1","offset":1,"topic":"t","partition":0}
{"timestamp":1795448184609,"name":"producer_send_error","topic":"t","key":null,"value":"2","exception":"class \
org.apache.kafka.common.errors.NetworkException","message":"Disconnected from node 3"}
SLF4J: a stray log line
{"timestamp":1795447913187,"name":"shutdown_complete"}
{"timestamp":1795447913188,"name":"tool_data","sent":3,"acked":2,"target_throughput":-1,"avg_throughput":12919.8}
"""

CONSUMER_LINES = """\
{"timestamp":1795447917483,"name":"partitions_assigned","partitions":[{"topic":"t","partition":0}]}
{"timestamp":1795447917687,"name":"record_data","key":null,"value":"0","topic":"t","partition":0,"offset":0}
{"timestamp":1795447917689,"name":"record_data","key":null,"value":"1","topic":"t","partition":0,"offset":1}
{"timestamp":1795447917689,"name":"record_data","key":null,"value":"1","topic":"t","partition":0,"offset":2}
{"timestamp":1795447917714,"name":"records_consumed","count":3,"partitions":[]}
"""

PERF = """\
Warmup first 2000 records. Steady state results will print after the complete test summary.
1 records sent, 1.0 records/sec (0.00 MB/sec), 1012.0 ms avg latency, 1012.0 ms max latency.
1001 records sent, 999.0 records/sec (0.98 MB/sec), 5.7 ms avg latency, 38.0 ms max latency.
15000 records sent, 996.942709 records/sec (0.97 MB/sec), 31.55 ms avg latency, 1012.00 ms max latency, 2 ms 50th, \
335 ms 95th, 440 ms 99th, 502 ms 99.9th.
13000 steady state records sent, 996.321275 records/sec (0.97 MB/sec), 3.23 ms avg latency, 58.00 ms max latency, \
2 ms 50th, 11 ms 95th, 29 ms 99th, 52 ms 99.9th.
"""

CONSUMER_PERF = """\
start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, \
fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
2026-11-23 15:40:01:000, 2026-11-23 15:40:04:150, 97.6563, 31.0315, 100000, 31776.2949, 1010, 2258, 43.2490, \
44286.9796
"""


def test_the_producer_log_keeps_each_acknowledgement_and_error() -> None:
    log = ProducerLog()
    for event in events(PRODUCER_LINES.splitlines()):
        log.add(event)
    assert log.acked == {0: 1795447912528, 1: 1795447912534}
    assert (log.errors, log.error_kinds, log.sent, log.finished) == (1, {"NetworkException": 1}, 3, True)
    assert log.acked_between(1795447912530, 1795447912600) == 1


def test_consumed_values_keep_repeats() -> None:
    assert consumed_values(CONSUMER_LINES.splitlines()) == [0, 1, 1]


def test_the_steady_state_summary_wins_over_the_whole_run() -> None:
    run = producer_summary(PERF)
    assert (run.records, run.mb_per_s, run.p50_ms, run.p99_ms, run.max_ms) == (13000, 0.97, 2.0, 29.0, 58.0)


def test_without_warm_up_the_whole_run_is_the_summary() -> None:
    whole = "\n".join(PERF.splitlines()[:4])
    assert producer_summary(whole).p99_ms == 440.0


def test_consumer_performance_row() -> None:
    run = consumer_summary(CONSUMER_PERF)
    assert (run.mb, run.mb_per_s, run.records, run.fetch_mb_per_s) == (97.6563, 31.0315, 100000, 43.249)


@pytest.mark.parametrize("parse", [producer_summary, consumer_summary])
def test_output_without_a_result_is_an_error_quoting_it(parse: object) -> None:
    with pytest.raises(KafkaRequestFailed, match="Connection refused"):
        parse("ERROR Connection refused")  # type: ignore[operator]
