"""The metrics the controller decides on, read through the aggregation layer as upstream reads them.

`source.MetricsSource` is the port reconcile talks to; `rest` implements it over the three
metrics APIs (metrics.k8s.io, custom.metrics.k8s.io at the discovery-preferred version,
external.metrics.k8s.io); `fake` is its map-backed twin for tests.
"""
