"""kraftform's exporter's text, pure: Prometheus' format, labels escaped, an unread cluster said as such."""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path

from kraftform.cluster.connection import Connection
from kraftform.declared import load_specs
from kraftform.monitoring.status import ConnectorStatus, ConsumerStatus, Status, TopicStatus
from kraftform.runtime.observation.exporter import STALE_S, _Looker, render_metrics

from ....conftest import EXAMPLE_SPECS

STATUS = Status("kftest", (1, 2, 3), (1, 2, 3), (1001,), (1001,), 1001,
                (TopicStatus("orders", 3, (1,), (), ()),),
                (ConsumerStatus("scorer", "spark", 1200, 1000), ConsumerStatus('odd"name', "group", None, 10_000)),
                ("Spark consumer scorer is 1,200 records behind",),
                (ConnectorStatus("kc", "archive", "running", "running", ((0, "running", ""), (1, "failed", "Boom"))),
                 ConnectorStatus("kc", "stray", None, "running")))
LINE = re.compile(r'^[a-z_]+\{(?:[a-z]+="(?:[^"\\]|\\.)*",?)*\} -?[0-9.e+]+$')


def test_every_line_is_prometheus_text_and_the_figures_are_the_status() -> None:
    text = render_metrics("kftest", STATUS, {"ca": 1_866_800_000.0})
    samples = [line for line in text.splitlines() if not line.startswith("#")]
    assert all(LINE.match(line) for line in samples), samples
    assert 'kraftform_consumer_lag_records{cluster="kftest",consumer="scorer",kind="spark"} 1200.0' in samples
    assert not any(line.startswith("kraftform_consumer_lag_records") and "odd" in line for line in samples)
    assert 'kraftform_consumer_lag_limit_records{cluster="kftest",consumer="odd\\"name",kind="group"} 10000.0' \
        in samples
    assert 'kraftform_status_healthy{cluster="kftest"} 0.0' in samples
    assert 'kraftform_connector_failed_tasks{cluster="kftest",connect="kc",connector="archive"} 1.0' in samples
    assert 'kraftform_connector_as_declared{cluster="kftest",connect="kc",connector="archive"} 0.0' in samples
    assert not any("as_declared" in line and "stray" in line for line in samples)  # not declared: no verdict
    assert 'kraftform_topic_under_replicated_partitions{cluster="kftest",topic="orders"} 1.0' in samples
    assert 'kraftform_certificate_expiry_timestamp_seconds{cluster="kftest",certificate="ca"} 1866800000.0' in samples


def test_an_unread_cluster_is_status_up_0_and_no_stale_figures() -> None:
    text = render_metrics("kftest", None, {})
    assert 'kraftform_status_up{cluster="kftest"} 0.0' in text
    assert "kraftform_consumer_lag" not in text and "kraftform_status_healthy" not in text
    healthy = dataclasses.replace(STATUS, problems=())
    assert 'kraftform_status_healthy{cluster="kftest"} 1.0' in render_metrics("kftest", healthy, {})


def test_a_scrape_gets_the_last_look_and_a_look_older_than_stale_is_status_up_0() -> None:
    specs = load_specs(EXAMPLE_SPECS)
    looker = _Looker(specs, Connection("127.0.0.1:9"), Path("/nonexistent"), None)
    text = render_metrics(specs.cluster.name, STATUS, {})
    looker.latest = (time.monotonic(), text)
    looker.looked.set()
    assert looker.metrics() == text
    looker.latest = (time.monotonic() - STALE_S - 1, text)
    stale = looker.metrics()
    assert f'kraftform_status_up{{cluster="{specs.cluster.name}"}} 0.0' in stale
    assert "kraftform_consumer_lag_records" not in stale
