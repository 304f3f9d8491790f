"""stacgis dashboards and alert rules as code (grafana-foundation-sdk, plain Prometheus rule groups)."""
