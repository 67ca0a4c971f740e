"""What our client and the real kubectl each send for `GET /api` with one kubeconfig, for tests
that hold our kubeconfig reading to kubectl's: the server's record of each request."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Protocol

from kubecommon.kube.client import KubeClient
from kubecommon.kube.config import load_kube_config


class Recording(Protocol):
    """A test server's log of what each request carried, newest last."""

    seen: list[Any]


async def ours_and_kubectls(path: Path, recorder: Recording) -> tuple[Any, Any]:
    """(what our client's request carried, what kubectl's carried); both must get an answer."""
    client = KubeClient(load_kube_config(path), timeout=1.5)
    await client.start()
    try:
        assert (await client.get("/api"))["kind"] == "APIVersions"
    finally:
        await client.close()
    ours = recorder.seen.pop()
    kubectl = await asyncio.create_subprocess_exec(
        "kubectl", f"--kubeconfig={path}", "get", "--raw", "/api",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _, err = await asyncio.wait_for(kubectl.communicate(), 20)
    assert kubectl.returncode == 0, err.decode()
    return ours, recorder.seen[-1]
