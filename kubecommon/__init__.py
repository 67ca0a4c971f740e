"""Kubernetes primitives shared by the adapter and the controller.

One home for each: quantities (`kubecommon.quantity`), label and field selectors
(`kubecommon.selectors`, `kubecommon.fieldselectors`), `metav1.Status` errors (`kubecommon.status`),
TLS material (`kubecommon.tls`), shared in-flight calls (`kubecommon.singleflight`) and bounded LRU
caches (`kubecommon.lru`). Nothing here performs network I/O; `tls` only reads or writes the files
it is pointed at.
"""
