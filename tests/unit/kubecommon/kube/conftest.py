"""Shared fixtures for the kube client tests: `api`, the in-process API server with a started
KubeClient attached as `api.client`, both closed after the test; `server`, the same server with
one ConfigMap (`default/settings`) and no client, for tests that build their own (transports);
`https_server`, that server over HTTPS (`ca_pem` its CA), for tests whose kubeconfig user must
authenticate: a kubeconfig's credentials are sent only over https, as kubectl sends them."""

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


async def _with_settings(tls: bool) -> AsyncIterator[FakeAPIServer]:
    api = FakeAPIServer(tls=tls)
    await api.start()
    await api.put("/api/v1/configmaps", "settings", "default")
    yield api
    await api.close()


@pytest.fixture
async def server() -> AsyncIterator[FakeAPIServer]:
    async for api in _with_settings(tls=False):
        yield api


@pytest.fixture
async def https_server() -> AsyncIterator[FakeAPIServer]:
    async for api in _with_settings(tls=True):
        yield api
