"""Kubernetes primitives shared by the adapter and the controller.

One home for each: quantities (`kubecommon.quantity`), label selectors (`kubecommon.selectors`),
`metav1.Status` errors (`kubecommon.status`) and TLS material (`kubecommon.tls`). Nothing here
performs network I/O; `tls` only reads or writes the files it is pointed at.
"""
