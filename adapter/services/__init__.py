"""Transport-free metrics services: custom, external and resource metrics as plain dataclasses.

Handlers under `adapter.server.handlers` parse HTTP and render; these modules hold the behaviour
(registry lookup, object selection from watch caches, PromQL through `adapter.rules.query`, value
conversion, upstream error wording). They never import aiohttp, so the conformance runner and
benchmarks can call them directly.

Public surface (import the submodules): `custom_metrics.CustomMetricsService`,
`external_metrics.ExternalMetricsService`, `resource_metrics.ResourceMetricsService`, `results`,
`errors`; `queries` holds what the custom and resource services share to query Prometheus.
"""
