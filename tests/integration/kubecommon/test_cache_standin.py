"""The watch cache against the real API-server stand-in when the connection under a watch breaks
(an API-server restart behind a load balancer, a NAT or proxy dropping the connection): the cache
resumes the watch after the last event it applied, as client-go's reflector does, so a break does
not cost a full relist once the server's retained history has moved past the list. A connection
that goes silent without a reset (the server's host or a NAT vanished) is found by the missing
bookmarks and resumed on a new connection."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from kubecommon.kube.cache import ObjectCache
from kubecommon.kube.client import KubeClient
from kubecommon.kube.config import load_kube_config
from kubecommon.kube.resources import ResourceInfo
from tests.fixtures.standin import start_standin

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

CONFIGMAPS = ResourceInfo(group="", version="v1", resource="configmaps", kind="ConfigMap", namespaced=True)
NAMESPACE = "cache-test"
RETAINED_EVENTS = 5  # the stand-in keeps this many events per resource (kube-apiserver: its watch cache)


class BreakableProxy:
    """A TCP relay in front of the stand-in whose open connections can be cut mid-stream, or
    frozen: still open, but nothing they carry arrives any more (a dead path without a reset)."""

    def __init__(self, port: int) -> None:
        self._port = port
        self._writers: set[asyncio.StreamWriter] = set()
        self._frozen: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None
        self.connections = 0

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._port)
        self.connections += 1
        self._writers |= {writer, up_writer}
        frozen = self._frozen
        await asyncio.gather(_pipe(reader, up_writer, frozen), _pipe(up_reader, writer, frozen))

    def cut(self) -> None:
        for writer in self._writers:
            writer.transport.abort()
        self._writers.clear()

    def freeze(self) -> None:
        """From now on the open connections drop what they carry; new ones relay normally."""
        self._frozen |= self._writers
        self._writers = set()

    async def close(self) -> None:
        self._writers |= self._frozen
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter,
                frozen: set[asyncio.StreamWriter]) -> None:
    with contextlib.suppress(OSError):
        while data := await source.read(65536):
            if sink in frozen:
                continue  # lost on the way
            sink.write(data)
            await sink.drain()
    sink.transport.abort()


async def eventually(check, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.02)


@pytest.fixture
async def clients(tmp_path: Path) -> AsyncIterator[tuple[KubeClient, KubeClient, BreakableProxy]]:
    """A client straight to a private stand-in (for writes), one through the proxy (for the cache)."""
    with start_standin(tmp_path / "standin", "--watch-cache-size", str(RETAINED_EVENTS),
                       "--bookmark-interval", "0.5") as standin:
        proxy = BreakableProxy(standin.port)
        config = load_kube_config(standin.kubeconfig, context="standin")
        writer = KubeClient(config, timeout=5.0)
        watcher = KubeClient(dataclasses.replace(config, server=f"https://127.0.0.1:{await proxy.start()}"),
                             timeout=5.0)
        await writer.start()
        await watcher.start()
        try:
            await writer.post("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
            yield writer, watcher, proxy
        finally:
            await watcher.close()
            await writer.close()
            await proxy.close()


async def create_configmap(kube: KubeClient, name: str) -> None:
    await kube.post(f"/api/v1/namespaces/{NAMESPACE}/configmaps", {"metadata": {"name": name}})


async def test_a_broken_watch_resumes_after_the_last_event_instead_of_relisting(clients) -> None:
    kube, watcher, proxy = clients
    cache = ObjectCache(watcher, CONFIGMAPS, namespace=NAMESPACE, max_backoff=0.2)
    cache.start()
    try:
        await cache.wait_synced(5)
        names = [f"cm-{i}" for i in range(2 * RETAINED_EVENTS)]
        for name in names:  # more writes than the server retains: the list's version leaves its history
            await create_configmap(kube, name)
        await eventually(lambda: all(cache.get(NAMESPACE, n) is not None for n in names))
        proxy.cut()  # the watch connection breaks mid-stream (not a clean end of the watch)
        await create_configmap(kube, "after-the-break")
        await eventually(lambda: cache.get(NAMESPACE, "after-the-break") is not None)
        assert cache.relists == 1, "the watch resumed from the last event it had applied"
    finally:
        await cache.stop()


async def test_breaks_between_healthy_watches_neither_relist_nor_slow_the_resume(clients) -> None:
    """A connection that a proxy or load balancer resets now and then (each watch healthy in
    between) is not an outage: every break resumes promptly, none relists."""
    kube, watcher, proxy = clients
    cache = ObjectCache(watcher, CONFIGMAPS, namespace=NAMESPACE, relist_after_outage=0.5)
    cache.start()
    try:
        await cache.wait_synced(5)
        for round_ in range(5):
            proxy.cut()
            await create_configmap(kube, f"round-{round_}")
            await eventually(lambda round_=round_: cache.get(NAMESPACE, f"round-{round_}") is not None, timeout=2.0)
            await asyncio.sleep(0.6)  # the resumed watch stays healthy longer than relist_after_outage
        assert cache.relists == 1
    finally:
        await cache.stop()


async def test_a_silent_watch_connection_is_presumed_dead_and_resumed(clients) -> None:
    """The stand-in sends a bookmark every half second (kube-apiserver: every minute); a watch that
    hears nothing for the idle limit is resumed on a new connection, not left waiting for TCP."""
    kube, watcher, proxy = clients
    cache = ObjectCache(watcher, CONFIGMAPS, namespace=NAMESPACE, watch_idle_seconds=3.0, max_backoff=0.2)
    cache.start()
    try:
        await cache.wait_synced(5)
        await asyncio.sleep(0.5)
        connections = proxy.connections  # the list's and the watch's
        await asyncio.sleep(4.0)  # longer than the idle limit: the bookmarks keep a healthy watch
        assert proxy.connections == connections, "a watch that hears bookmarks is not restarted"
        proxy.freeze()
        await create_configmap(kube, "after-the-silence")
        await eventually(lambda: cache.get(NAMESPACE, "after-the-silence") is not None, timeout=10.0)
        assert cache.relists == 1, "the watch resumed from the last event or bookmark it had"
    finally:
        await cache.stop()
