"""Kubernetes access for the adapter: an async aiohttp client, watch caches, auth reviews.

Everything a request handler reads from Kubernetes on a hot path comes from a watch cache
(`cache.ObjectCache`, list once then watch); TokenReview and SubjectAccessReview answers are
cached with bounded TTLs and size (`reviews`). kubeconfig files are read with PyYAML in
`config`; the synchronous `kubernetes` package is never used on the serving path.

Public surface (import the submodules):
- `objects.KubeObject`, `objects.ObjectReader` / `objects.ObjectCaches` Protocols
- `cache.ObjectCache`, `caches.KubeObjectCaches`, `fake.FakeObjectCaches`
- `client.KubeClient`, `config.load_kube_config`
- `reviews.TokenReviewer`, `reviews.SubjectAccessReviewer`
- `authconfig.AuthConfigWatcher` (kube-system/extension-apiserver-authentication)
- `errors`: `KubeError`, `KubeUnavailable`, `CacheNotSynced`, `UnknownResource`, `KubeAPIError`
"""
