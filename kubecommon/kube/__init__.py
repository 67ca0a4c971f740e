"""The Kubernetes client both binaries use: async REST on aiohttp, kubeconfig, list-then-watch caches.

One copy for the adapter and the controller (neither imports the other). Everything a hot path
reads from Kubernetes comes from a watch cache (`cache.ObjectCache`, list once then watch, relist
on 410 like client-go's reflector); discovery-based resource mapping is `resources`.

Public surface (import the submodules):
- `client.KubeClient`, `config.load_kube_config` / `config.in_cluster_config`
  (kubeconfig `exec` credential plugins: `exec_auth`)
- `objects.KubeObject`, `objects.ObjectReader` / `objects.ObjectCaches` Protocols
- `cache.ObjectCache`, `caches.KubeObjectCaches`, `fake.FakeObjectCaches`
- `resources.ResourceInfo`, `resources.ResourceResolver`
- `ttlcache.TTLCache`
- `errors`: `KubeError`, `KubeUnavailable`, `CacheNotSynced`, `UnknownResource`, `KubeAPIError`
"""
