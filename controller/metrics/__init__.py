"""The metrics the controller decides on, read through the aggregation layer as upstream reads them.

`source.MetricsSource` is the port reconcile talks to; `rest.AggregatedMetricsSource` implements it
over the three metrics APIs (metrics.k8s.io, custom.metrics.k8s.io at the discovery-preferred
version chosen by `versions`, external.metrics.k8s.io); `wire` (pure) turns their bodies into
observations; `report.FetchObserver` is the hook the controller's /metrics counts fetches with;
`fake.FakeMetricsSource` is the map-backed twin for tests.
"""
