"""The in-process writes server with a started client, closed after each test."""

from collections.abc import AsyncIterator

import pytest

from .apiserver import WritesServer


@pytest.fixture
async def writes() -> AsyncIterator[WritesServer]:
    server = WritesServer()
    await server.start()
    yield server
    await server.close()
