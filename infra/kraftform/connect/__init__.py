"""Kafka Connect's REST API, as kraftform plans and applies connectors through it."""
