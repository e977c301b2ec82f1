"""kafka-python, for what confluent-kafka lacks (client quotas, partition reassignments, feature levels, share
groups' offsets), imported here and nowhere else.

kafka-python 3.0 builds its protocol classes from JSON definitions read with `importlib.resources.read_text`,
deprecated since Python 3.11: importing its admin client raises 218 DeprecationWarnings, and a user's pytest run
that touched kraftform's plugin ended "1 passed, 218 warnings". They are silenced here, around the import and the
class definitions that read such files, and nowhere else: a user's own warnings and filters are untouched.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def quiet() -> Iterator[None]:
    """kafka-python's deprecated resource reads, and only those, are not reported inside this block."""
    with warnings.catch_warnings():
        # importlib.resources' read_text warns, and so does the open_text it calls (attributed to importlib).
        warnings.filterwarnings("ignore", r".* is deprecated\. Use files\(\) instead", DeprecationWarning)
        yield


with quiet():
    from kafka.admin import KafkaAdminClient
    from kafka.errors import KafkaError, for_code
    from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest
    from kafka.protocol.api_message import ApiMessage
    from kafka.protocol.metadata import MetadataRequest
    from kafka.structs import TopicPartition

__all__ = ["AlterClientQuotasRequest", "ApiMessage", "DescribeClientQuotasRequest", "KafkaAdminClient", "KafkaError",
           "MetadataRequest", "TopicPartition", "for_code", "quiet"]
