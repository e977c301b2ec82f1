"""Spark Structured Streaming consumers: the query understood offline (`query`), the profile turned into Spark
and Kafka options (`settings`), and the job that runs them (`job`, `sinks`, `checkpoint`: these import pyspark
only when a job runs, so validation needs no JVM)."""
