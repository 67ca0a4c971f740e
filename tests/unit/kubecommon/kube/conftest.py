"""Shared fixture for the kube client tests: the in-process API server with a started KubeClient
attached as `server.client`, both closed after the test."""

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
