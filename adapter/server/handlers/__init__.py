"""aiohttp handlers, one module per concern; each exposes `register(app, ...)`.

Infrastructure (E1): discovery, openapi, health, metrics. Metrics APIs (E2): custom_metrics,
external_metrics, resource_metrics. The route table is assembled in `adapter.server.routes`.
"""
