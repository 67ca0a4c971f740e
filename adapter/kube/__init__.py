"""The adapter's own Kubernetes pieces: request authentication and authorization reviews.

The generic client, kubeconfig loader and watch caches live in `kubecommon.kube` (shared with
the controller). Here: TokenReview and SubjectAccessReview answers cached with bounded TTLs and
size (`reviews`), the caller identity (`identity`), and the
kube-system/extension-apiserver-authentication watcher (`authconfig`).
"""
