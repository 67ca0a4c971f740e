"""Async access to Prometheus' HTTP API: the `PrometheusAPI` port, its aiohttp implementation,
typed errors, settings/flags and a map-backed fake.

Internal code imports modules, e.g. `from adapter.prometheus import api, errors`.
"""

__all__ = ["api", "client", "errors", "fake", "settings"]
