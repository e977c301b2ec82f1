"""I/O against a live cluster through the Kafka Admin protocol: connect, observe, check passwords, apply.

confluent-kafka does the work; kafka-python only what confluent-kafka lacks (client quotas and partition
reassignment). Everything here turns what it reads into the pure `plan.state` types, so planning stays
free of I/O.
"""
