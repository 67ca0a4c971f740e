"""A map-backed Lease endpoint and a virtual event-loop clock for the leader-election tests.

`FakeLeases` answers the elector's GET/POST/PUT like an API server: resourceVersion
preconditions (409 on a stale write), 404 for a missing lease, Events accepted and counted.
`down` makes every call fail (unreachable server); `hang` makes every call wait forever.
`Link` is one replica's own connection to a shared `FakeLeases`: it can be cut (`down`, `hang`)
or have only its Events hang while the other replicas still reach the server.
`virtual_time` makes the running loop's clock jump to the next timer whenever nothing is ready,
so 15 s leases play out in milliseconds of real time.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import Callable
from typing import Any

from kubecommon.kube.errors import KubeAPIError, KubeUnavailable
from kubecommon.status import status_error_from_dict


def _error(code: int, method: str, path: str) -> KubeAPIError:
    reason = {404: "NotFound", 409: "Conflict"}[code]
    return KubeAPIError(status_error_from_dict({"code": code, "reason": reason, "message": reason}, code),
                        method=method, path=path)


class FakeLeases:
    def __init__(self) -> None:
        self.leases: dict[str, dict[str, Any]] = {}
        self.rv = 0
        self.writes: list[tuple[str, dict[str, Any]]] = []  # (method, spec) of every accepted write
        self.events: list[dict[str, Any]] = []
        self.down = False
        self.hang = False

    async def request_json(self, method: str, path: str, *, params: Any = None, body: Any = None,
                           timeout: float | None = None) -> dict[str, Any]:
        if self.hang:
            await asyncio.Event().wait()
        if self.down:
            raise KubeUnavailable(f"{method} {path}: connection refused")
        await asyncio.sleep(0)
        if path.endswith("/events"):
            self.events.append(body)
            return body
        if method == "GET":
            if path not in self.leases:
                raise _error(404, method, path)
            return copy.deepcopy(self.leases[path])
        if method == "POST":
            key = f"{path}/{body['metadata']['name']}"
            if key in self.leases:
                raise _error(409, method, path)
            return self._store(method, key, body)
        if path not in self.leases:
            raise _error(404, method, path)
        if body["metadata"].get("resourceVersion") != self.leases[path]["metadata"]["resourceVersion"]:
            raise _error(409, method, path)
        return self._store(method, path, body)

    def _store(self, method: str, key: str, body: dict[str, Any]) -> dict[str, Any]:
        self.rv += 1
        obj = copy.deepcopy(body)
        obj["metadata"] = {**obj["metadata"], "resourceVersion": str(self.rv), "uid": "lease-uid"}
        self.leases[key] = obj
        self.writes.append((method, copy.deepcopy(obj["spec"])))
        return copy.deepcopy(obj)

    def spec(self, name: str = "ctl", namespace: str = "kube-system") -> dict[str, Any]:
        return self.leases[f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}"]["spec"]


class Link:
    """One replica's connection to a shared `FakeLeases`; `after_write` runs once a lease write is answered."""

    def __init__(self, leases: FakeLeases) -> None:
        self.leases = leases
        self.down = False
        self.hang = False
        self.hang_events = False
        self.after_write: Callable[[], None] | None = None

    async def request_json(self, method: str, path: str, *, params: Any = None, body: Any = None,
                           timeout: float | None = None) -> dict[str, Any]:
        if self.hang or (self.hang_events and path.endswith("/events")):
            await asyncio.Event().wait()
        if self.down:
            raise KubeUnavailable(f"{method} {path}: connection refused")
        answer = await self.leases.request_json(method, path, params=params, body=body, timeout=timeout)
        if method != "GET" and not path.endswith("/events") and self.after_write is not None:
            self.after_write()
        return answer


@contextlib.contextmanager
def virtual_time(loop: asyncio.AbstractEventLoop):
    """Run `loop` on a virtual clock: a select() that would block advances the clock instead."""
    selector = loop._selector  # type: ignore[attr-defined]
    real_select, real_time = selector.select, loop.time
    offset = [0.0]

    def select(timeout: float | None = None):
        if timeout is None:
            raise AssertionError("deadlock: nothing scheduled and nothing to wait for")
        offset[0] += max(0.0, timeout)
        return real_select(0)

    selector.select = select
    loop.time = lambda: real_time() + offset[0]  # type: ignore[method-assign]
    try:
        yield
    finally:
        selector.select = real_select
        del loop.time
