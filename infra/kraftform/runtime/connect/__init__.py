"""The Kafka Connect workers beside a cluster kraftform runs: JVMs on this machine (`jvm_workers`), containers
on Docker engines (`containers`), and the one entry whichever runtime runs them (`clusters`)."""
