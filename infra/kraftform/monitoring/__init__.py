"""Monitoring as data: the JMX exporter's rules for every node, Prometheus' scrape configuration and alert rules
generated from the specs, a Grafana dashboard, and `kraftform status`'s verdict from what was observed. Pure;
the processes (Prometheus, kraftform's own exporter) are started by `runtime.observation.monitoring`."""
