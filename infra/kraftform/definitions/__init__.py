"""Kafka's own definitions, for the release kraftform pins: every topic, server and group setting (name, type,
default, valid values, how it is updated) and each release's feature levels, generated from Kafka's jars
(`server_table`, `group_table`, `features`; scripts/generate-kafka-configs), and the checkers that judge a
declared value by them (`topic_configs`, `server_configs`, `group_configs`). Pure: the bottom layer."""
