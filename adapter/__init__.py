"""The metrics API server: custom, external and resource metrics answered from Prometheus."""
