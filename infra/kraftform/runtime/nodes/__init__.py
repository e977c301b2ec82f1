"""The Kafka nodes: what a runtime records in its state directory (`deployment`), the two runtimes that run them
(`local`: JVMs on this machine; `docker_engine`: containers on the machine's engine or the spec hosts'), the
roll engine that changes them one at a time (`rolling`), their status, Kafka's own tools, and the class-data
archive that starts them fast."""
