"""Shared fixtures for the kube client tests: `api`, the in-process API server with a started
KubeClient attached as `api.client`, both closed after the test; `server`, the same server with
one ConfigMap (`default/settings`) and no client, for tests that build their own (exec plugins,
transports)."""

from collections.abc import AsyncIterator

import pytest

from kubecommon.kube.client import KubeClient

from .apiserver import FakeAPIServer


@pytest.fixture
async def api() -> AsyncIterator[FakeAPIServer]:
    server = FakeAPIServer()
    client = KubeClient(await server.start(), timeout=2.0)
    await client.start()
    server.client = client
    yield server
    await client.close()
    await server.close()


@pytest.fixture
async def server() -> AsyncIterator[FakeAPIServer]:
    api = FakeAPIServer()
    await api.start()
    await api.put("/api/v1/configmaps", "settings", "default")
    yield api
    await api.close()
