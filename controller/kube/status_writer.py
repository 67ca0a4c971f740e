"""`KubeStatusWriter`: writes a PromAutoscaler's `status` subresource (ports.StatusWriter).

Job: replace the whole status with the one status.build_status made, in one request: a JSON
patch `add /status` (which replaces an existing member), so fields the new status no longer has
disappear and no read-modify-write cycle is needed. A 404 means the object was deleted while we
synced: nothing to write, not an error to retry (counted in `gone`). Other errors propagate so
reconcile can emit `FailedUpdateStatus` as upstream does and try again next period.

Non-goals: deciding whether to write (status.plan_status_write), native HPAs (never written),
optimistic concurrency (one leader writes status; a lost race is repaired by the next write).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from controller.kube.objects import API_GROUP, KIND
from controller.kube.ports import ObjectKey, StatusWriter
from kubecommon.kube.client import KubeClient
from kubecommon.kube.errors import KubeAPIError
from kubecommon.kube.resources import ResourceInfo

__all__ = ["PROMAUTOSCALERS", "KubeStatusWriter"]

_log = logging.getLogger(__name__)
PROMAUTOSCALERS = ResourceInfo(group=API_GROUP, version="v1alpha1", resource="promautoscalers", kind=KIND,
                               namespaced=True)
_JSON_PATCH = "application/json-patch+json"


class KubeStatusWriter:
    def __init__(self, client: KubeClient, *, resource: ResourceInfo = PROMAUTOSCALERS) -> None:
        self._client = client
        self._resource = resource
        self.written = 0
        self.gone = 0

    async def write(self, key: ObjectKey, status: Mapping[str, Any]) -> None:
        path = f"{self._resource.collection_path(key.namespace)}/{key.name}/status"
        try:
            await self._client.patch(path, [{"op": "add", "path": "/status", "value": dict(status)}],
                                     content_type=_JSON_PATCH)
        except KubeAPIError as err:
            if err.code == 404:
                self.gone += 1
                _log.info("not writing status of %s: it no longer exists", key)
                return
            raise
        self.written += 1


def _port_check(client: KubeClient) -> None:
    """mypy proves the real writer satisfies its port."""
    port: StatusWriter = KubeStatusWriter(client)
    del port
