"""The controller's Kubernetes edge: autoscaler objects in and out, `/scale`, pods, status, events.

`ports` holds the narrow Protocols reconcile talks to (and the values they carry); the real
implementations sit on `kubecommon.kube` (client, discovery, watch caches) and the map-backed
fakes in `fake` implement the same Protocols for tests. Raw Kubernetes JSON is typed only here:

- reading: `objects` (PromAutoscaler or autoscaling/v2 HPA -> `Autoscaler`), `hpa_spec` (the
  HPA spec -> `AutoscalerSpec` + metric queries), `times` (RFC 3339 <-> epoch seconds);
- status: `status` (the one place status JSON is built, and when to write it),
  `last_decision` (the bounded explanation, TARGETS column, limiting reason);
- ports: `scale.KubeScaleClient`, `pods.CachedPodLister`, `status_writer.KubeStatusWriter`,
  `events.KubeEventSink` (with client-go's correlator in `event_correlator`).
"""
