"""Which version of a metrics API group to call, chosen from discovery and re-checked.

Upstream's custom metrics client reads the group from discovery, takes the server's preferred
version when it knows it (v1beta2, then v1beta1), otherwise the first listed version it knows,
caches the choice and invalidates it once per sync period. The resource metrics client does the
same for metrics.k8s.io but lets its own order win (v1 whenever served, else v1beta1). Here the
choice is cached for `refresh_seconds` (default 5 min), discovery runs once for concurrent
callers, and a caller whose request got 404 may ask for a re-check (at most one per
`recheck_seconds`), so an adapter upgrade or a removed APIService is picked up at once.

Non-goals: the metric requests themselves (`rest`), versions of other groups.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubecommon.kube.client import KubeClient
from kubecommon.kube.errors import KubeAPIError, KubeError
from kubecommon.singleflight import SingleFlight

__all__ = ["CUSTOM_METRICS", "RESOURCE_METRICS", "GroupVersions", "NoVersion", "VersionChooser"]


class NoVersion(Exception):
    """The group is not registered, or serves no version this client knows (upstream wording)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GroupVersions:
    group: str
    known: tuple[str, ...]  # most wanted first
    what: str  # "custom metrics", as in "no custom metrics API (custom.metrics.k8s.io) registered"
    client_order_wins: bool  # True: the first known served version, whatever the server prefers

    def choose(self, group_doc: dict[str, Any]) -> str:
        served = [str(v.get("version") or "") for v in group_doc.get("versions") or () if isinstance(v, dict)]
        preferred = str((group_doc.get("preferredVersion") or {}).get("version") or "")
        if self.client_order_wins:
            found = next((v for v in self.known if v in served), None)
        elif preferred in self.known:
            found = preferred
        else:
            found = next((v for v in served if v in self.known), None)
        if found is None:
            raise NoVersion(f"no known available {self.what} API versions found")
        return found


CUSTOM_METRICS = GroupVersions(group="custom.metrics.k8s.io", known=("v1beta2", "v1beta1"),
                               what="custom metrics", client_order_wins=False)
RESOURCE_METRICS = GroupVersions(group="metrics.k8s.io", known=("v1", "v1beta1"),
                                 what="resource metrics", client_order_wins=True)


class VersionChooser:
    """The cached version choice for one group; `version()` raises NoVersion or KubeError."""

    def __init__(self, client: KubeClient, group: GroupVersions, *, refresh_seconds: float = 300.0,
                 recheck_seconds: float = 15.0, timeout: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self.group = group
        self._refresh = refresh_seconds
        self._recheck = recheck_seconds
        self._timeout = timeout
        self._clock = clock
        self._chosen: str | None = None
        self._chosen_at = float("-inf")
        self._flight: SingleFlight[str, str] = SingleFlight()

    @property
    def cached(self) -> str | None:
        return self._chosen

    async def version(self) -> str:
        if self._chosen is not None and self._clock() - self._chosen_at < self._refresh:
            return self._chosen
        try:
            return await self._flight.do("discover", self._discover)
        except KubeError:
            if self._chosen is not None:
                return self._chosen  # a transient discovery failure keeps the last good choice
            raise

    async def recheck_after_not_found(self, used: str) -> str | None:
        """After a 404 on `used`: re-discover (rate-limited); the new version if it changed."""
        if self._chosen is not None and self._chosen != used:
            return self._chosen  # another caller already moved on
        if self._clock() - self._chosen_at < self._recheck:
            return None
        try:
            fresh = await self._flight.do("discover", self._discover)
        except (NoVersion, KubeError):
            return None
        return fresh if fresh != used else None

    async def _discover(self) -> str:
        path = f"/apis/{self.group.group}"
        try:
            doc = await self._client.request_json("GET", path, timeout=self._timeout)
        except KubeAPIError as err:
            if err.code == 404:
                self._chosen = None
                raise NoVersion(f"no {self.group.what} API ({self.group.group}) registered") from None
            raise
        self._chosen = self.group.choose(doc)
        self._chosen_at = self._clock()
        return self._chosen
