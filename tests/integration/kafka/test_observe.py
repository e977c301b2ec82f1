"""What reading the cluster costs, in Admin requests per step, as Strimzi's operator tests count them."""

from __future__ import annotations

import pytest
from confluent_kafka.cimpl import NewTopic

from kraftform.cluster.connection import read_connection
from kraftform.kafka.admin import Admin
from kraftform.kafka.observe import observe

from ..conftest import LiveCluster, unique

pytestmark = pytest.mark.integration


def test_a_whole_cluster_read_is_a_fixed_number_of_requests_and_a_topic_read_fewer(
        local_cluster: LiveCluster) -> None:
    connection = read_connection(local_cluster.state_dir / "admin.properties")
    admin = Admin(connection)
    names = [unique("obs") for _ in range(40)]
    for name, future in admin.client.create_topics([NewTopic(n, 1, 1) for n in names]).items():
        admin.wait(future, f"create {name}")

    whole = observe(connection)
    assert set(names) <= set(whole.state.topics)
    # DescribeCluster, Metadata, DescribeConfigs (one batch of up to 1,000 topics), DescribeAcls,
    # DescribeUserScramCredentials, DescribeClientQuotas, DescribeFeatures, kafka-python's own bootstrap (2) and
    # each broker's own settings (one DescribeConfigs per broker: a broker describes its own).
    assert whole.requests["Metadata"] == 1 and whole.requests["DescribeConfigs"] == len(whole.state.topics) // 1000 + 1
    assert whole.requests["DescribeConfigs (brokers)"] == len(whole.state.brokers)
    assert sum(whole.requests.values()) == 8 + len(whole.state.brokers) + whole.requests["DescribeConfigs"]

    # The stack's topic set: named topics, read in the same requests however many there are.
    some = observe(connection, names[:30])
    assert set(some.state.topics) == set(names[:30])
    assert dict(some.requests) == {"DescribeCluster": 1, "Metadata": 1, "DescribeConfigs": 1}

    one = observe(connection, [names[0]])
    assert set(one.state.topics) == {names[0]} and one.state.brokers == whole.state.brokers
    assert dict(one.requests) == {"DescribeCluster": 1, "Metadata": 1, "DescribeConfigs": 1}
    assert one.state.topic_defaults.get("min.insync.replicas") == whole.state.topic_defaults.get("min.insync.replicas")

    gone = observe(connection, [unique("absent")])
    assert gone.state.topics == {} and dict(gone.requests) == {"DescribeCluster": 1, "Metadata": 1}
    for name, future in admin.client.delete_topics(names).items():
        admin.wait(future, f"delete {name}")
