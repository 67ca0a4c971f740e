"""Async access to Prometheus' HTTP API: the `PrometheusAPI` port, its aiohttp implementation,
typed errors, settings/flags, a map-backed fake and a timing wrapper (`instrumented`).

Internal code imports modules, e.g. `from adapter.prometheus import api, errors`.
"""

__all__ = ["api", "client", "errors", "fake", "instrumented", "settings"]
