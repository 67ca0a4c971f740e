"""The `ScaleClient` port's contract, run on both implementations: `KubeScaleClient` against the
in-process API server and the map-backed `FakeScaleClient`. A reconcile test on the fake is only
as good as this agreement: reads, optimistic writes, 409 retries, giving up, and the errors.

Each backend says how to set a target up and how to play another writer; the assertions read only
what a caller of the port observes (the returned Scale, a later read, the error raised).
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Protocol

import pytest

from controller.kube.fake import FakeScaleClient, target_key
from controller.kube.ports import ScaleClient, TargetRef
from controller.kube.scale import KubeScaleClient
from kubecommon.kube.errors import KubeAPIError, UnknownKind
from kubecommon.kube.resources import ResourceResolver

from .apiserver import WritesServer

DEPLOY = "/apis/apps/v1/deployments"
WEB = TargetRef(api_version="apps/v1", kind="Deployment", name="web")


class Backend(Protocol):
    client: ScaleClient

    def seed(self, replicas: int, selector: str = "") -> None:
        """shop/web (a Deployment) with `replicas`; also how another writer changes it."""

    def conflict(self, times: int) -> None:
        """Answer the next `times` writes with 409, another writer moving the resourceVersion."""


class _Real:
    def __init__(self, server: WritesServer) -> None:
        self.server = server
        self.client = KubeScaleClient(server.client, ResourceResolver(server.client), sleep=_no_sleep,
                                      rng=random.Random(1))  # fmt: skip

    def seed(self, replicas: int, selector: str = "") -> None:
        self.server.add_scale(DEPLOY, "shop", "web", replicas, selector=selector)

    def conflict(self, times: int) -> None:
        self.server.conflicts = times


class _Fake:
    def __init__(self) -> None:
        self.client = self.fake = FakeScaleClient()

    def seed(self, replicas: int, selector: str = "") -> None:
        self.fake.set("shop", WEB, replicas=replicas, selector=selector)

    def conflict(self, times: int) -> None:
        self.fake.conflicts[target_key("shop", WEB)] = times


async def _no_sleep(_seconds: float) -> None:
    return None


@pytest.fixture(params=["real", "fake"])
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    if request.param == "fake":
        yield _Fake()
        return
    server = WritesServer()
    await server.start()
    try:
        yield _Real(server)
    finally:
        await server.close()


@pytest.mark.parametrize("api_version", ["apps/v1", "apps/v1beta2"])
async def test_get_reads_the_scale_and_only_the_group_counts(backend: Backend, api_version: str) -> None:
    backend.seed(3, selector="app=web")
    scale = await backend.client.get("shop", TargetRef(api_version=api_version, kind="Deployment", name="web"))
    assert (scale.spec_replicas, scale.status_replicas, scale.selector) == (3, 3, "app=web")
    assert scale.resource_version


async def test_get_errors_name_what_is_missing(backend: Backend) -> None:
    backend.seed(3)
    # kube-apiserver names the group-qualified resource (deployments.apps); the fake the bare plural
    with pytest.raises(KubeAPIError, match=r'deployments(\.apps)? "db" not found'):
        await backend.client.get("shop", TargetRef(api_version="apps/v1", kind="Deployment", name="db"))
    with pytest.raises(UnknownKind):
        await backend.client.get("shop", TargetRef(api_version="example.org/v1", kind="Sprocket", name="s"))


async def test_update_writes_with_the_read_resource_version(backend: Backend) -> None:
    backend.seed(3)
    read = await backend.client.get("shop", WEB)
    written = await backend.client.update("shop", WEB, 5, read)
    assert written.spec_replicas == 5 and written.resource_version != read.resource_version
    assert (await backend.client.get("shop", WEB)) == written


@pytest.mark.parametrize(("conflicts", "ok"), [
    pytest.param(1, True, id="one-conflict-retried"),
    pytest.param(4, True, id="four-conflicts-retried"),
    pytest.param(5, False, id="gives-up-after-five-attempts"),
])  # fmt: skip
async def test_conflicts_reread_and_retry_five_attempts_in_all(backend: Backend, conflicts: int, ok: bool) -> None:
    backend.seed(3)
    read = await backend.client.get("shop", WEB)
    backend.conflict(conflicts)
    if ok:
        assert (await backend.client.update("shop", WEB, 6, read)).spec_replicas == 6
    else:
        with pytest.raises(KubeAPIError, match="409"):
            await backend.client.update("shop", WEB, 6, read)
    assert (await backend.client.get("shop", WEB)).spec_replicas == (6 if ok else 3)


async def test_a_stale_read_is_reread_and_written_over(backend: Backend) -> None:
    backend.seed(3)
    stale = await backend.client.get("shop", WEB)
    backend.seed(4)  # another writer
    assert (await backend.client.update("shop", WEB, 6, stale)).spec_replicas == 6
    assert (await backend.client.get("shop", WEB)).spec_replicas == 6


async def test_a_stale_read_already_at_the_target_is_not_written_again(backend: Backend) -> None:
    backend.seed(3)
    stale = await backend.client.get("shop", WEB)
    backend.seed(6)  # another writer got there first
    theirs = await backend.client.get("shop", WEB)
    assert await backend.client.update("shop", WEB, 6, stale) == theirs
    assert (await backend.client.get("shop", WEB)).resource_version == theirs.resource_version
