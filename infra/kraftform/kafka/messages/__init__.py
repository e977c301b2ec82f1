"""Kafka protocol messages that kafka-python 3.0 has no definition of, in the JSON form its message classes are
built from (`kafka.protocol.api_message.ApiMessage`, `load_json=` this package). Written from the messages of the
pinned Kafka's clients jar (field order and versions as its generated classes write them)."""
