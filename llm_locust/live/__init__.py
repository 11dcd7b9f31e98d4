"""Live metrics: aggregates, histograms, the metric catalog, Prometheus exporter, web UI, server metrics."""
