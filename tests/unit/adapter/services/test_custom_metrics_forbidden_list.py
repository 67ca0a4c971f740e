"""A `*` request whose object list the API server refuses (RBAC forbids listing deployments.apps)
is prometheus-adapter's 500 `unable to list matching resources`, never a 404, and the log line
names the permission that is missing so an operator can fix the ClusterRole."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from aiohttp import web

from kubecommon.kube.errors import KubeAPIError
from kubecommon.kube.fake import FakeObjectCaches
from kubecommon.status import Forbidden
from tests.unit.adapter.api_harness import CUSTOM, serve_adapter

DENIED = ('deployments.apps is forbidden: User "system:serviceaccount:monitoring:prom-autoscaler" cannot list '
          'resource "deployments" in API group "apps" in the namespace "shop"')


class _Forbidden(FakeObjectCaches):
    """Object caches over an API server whose RBAC refuses every list of deployments.apps."""

    async def reader(self, resource: Any) -> Any:
        if (resource.group, resource.resource) == ("apps", "deployments"):
            raise KubeAPIError(Forbidden(DENIED), method="GET", path="/apis/apps/v1/namespaces/shop/deployments")
        return await super().reader(resource)


@pytest.mark.timeout(10)  # two in-process servers (the adapter, a fake Prometheus): past 2 s when loaded
async def test_a_forbidden_object_list_is_a_500_naming_the_permission(caplog: pytest.LogCaptureFixture) -> None:
    async def no_prometheus(request: web.Request) -> web.StreamResponse:
        raise AssertionError("nothing may be queried for objects nobody could list")

    caplog.set_level(logging.INFO)
    async with serve_adapter(no_prometheus, objects=_Forbidden()) as http:
        response = await http.get(f"{CUSTOM}/namespaces/shop/deployments.apps/*/http_requests_per_second")
        body = await response.json()
    assert (response.status, body["reason"], body["message"]) == (
        500, "InternalError", "Internal error occurred: unable to list matching resources")
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("unable to list matching resources")]
    assert logged and 'cannot list resource "deployments" in API group "apps"' in logged[0]
