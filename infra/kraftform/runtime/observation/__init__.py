"""What watches a cluster kraftform runs: Prometheus and kraftform's exporter as processes (`monitoring`) and
the exporter's own metrics (`exporter`)."""
