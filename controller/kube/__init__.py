"""The controller's Kubernetes edge: autoscaler objects in and out, `/scale`, pods, status, events.

`ports` holds the narrow Protocols reconcile talks to (and the values they carry); the real
implementations sit on `kubecommon.kube` (client, discovery, watch caches) and the map-backed
fakes in `fake` implement the same Protocols for tests. Raw Kubernetes JSON is typed only here:
`objects` converts a PromAutoscaler or an autoscaling/v2 HPA into the algorithm's values, and
`status` is the one place the status JSON is built.
"""
