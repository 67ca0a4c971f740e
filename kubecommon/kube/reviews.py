"""TokenReview and SubjectAccessReview clients with bounded-TTL, bounded-size caches.

Job: delegated authentication and authorization calls to kube-apiserver with k8s.io/apiserver's
defaults: 10 s cache TTL for authenticated and unauthenticated tokens and for allowed and denied
decisions, API errors never cached, retries with backoff (500 ms x1.5, 5 steps) on transient
failures, identical concurrent reviews sent once. One deadline (10 s, like kube-apiserver's
delegated authentication and authorization timeouts) bounds each review INCLUDING its retries:
an API server that hangs (stopped, not refusing) costs a request 10 s, not five attempts of 10 s.
Tokens are cached by their SHA-256, never kept
in clear; SAR answers are keyed by the JSON of the whole spec and not cached when that key
exceeds 10 000 bytes (upstream's limit on request-controlled attributes).

Non-goals: deciding what a review result means for the HTTP answer (each binary's filters:
adapter.server.authn/authz, controller.http_auth).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kubecommon.kube.client import KubeClient
from kubecommon.kube.errors import KubeAPIError, KubeError, KubeUnavailable
from kubecommon.kube.identity import UserInfo
from kubecommon.kube.ttlcache import TTLCache
from kubecommon.singleflight import SingleFlight

__all__ = ["REVIEW_DEADLINE", "AccessDecision", "SubjectAccessReviewer", "TokenResult", "TokenReviewer"]

_MAX_CACHEABLE_KEY = 10_000
#: seconds one TokenReview or SubjectAccessReview may take, retries included
REVIEW_DEADLINE = 10.0
K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenResult:
    authenticated: bool
    user: UserInfo | None = None
    error: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class AccessDecision:
    allowed: bool
    denied: bool = False
    reason: str = ""
    evaluation_error: str = ""


def _status(answer: Mapping[str, Any], kind: str, *flags: str) -> Mapping[str, Any]:
    """The answer's `status`, refused (KubeError: a failed review, never a yes) when it or one of
    its boolean `flags` has another JSON type, which Go's decoder would reject."""
    status = answer.get("status") or {}
    if not isinstance(status, Mapping):
        raise KubeError(f"malformed {kind} answer: status is {type(status).__name__}, not an object")
    for flag in flags:
        value = status.get(flag)
        if value is not None and not isinstance(value, bool):  # null decodes as false in Go
            raise KubeError(f"malformed {kind} answer: status.{flag} is {value!r}, not a boolean")
    return status


def _transient(err: Exception) -> bool:
    if isinstance(err, KubeUnavailable):
        return True
    return isinstance(err, KubeAPIError) and (err.code >= 500 or err.code == 429)


class _CachedCaller(Generic[K, V]):
    """Cache + single-flight + retry around one kind of review call."""

    def __init__(self, *, max_entries: int, clock: Callable[[], float], retry_steps: int,
                 sleep: Callable[[float], Awaitable[None]], deadline: float) -> None:
        self.cache: TTLCache[K, V] = TTLCache(max_entries)
        self._deadline = deadline
        self._clock = clock
        self._flights: SingleFlight[K, V] = SingleFlight()
        self._steps = retry_steps
        self._sleep = sleep

    async def call(self, key: K, fetch: Callable[[], Awaitable[V]], ttl: Callable[[V], float],
                   cacheable: bool = True) -> V:
        cached = self.cache.get(key, now=self._clock())
        if cached is not None:
            return cached
        return await self._flights.do(key, lambda: self._with_retries(fetch),
                                      on_done=lambda done: self._settle(key, done, ttl, cacheable))

    def _settle(self, key: K, task: asyncio.Task[V], ttl: Callable[[V], float], cacheable: bool) -> None:
        if task.cancelled() or task.exception() is not None:
            return  # errors are never cached
        value = task.result()
        if cacheable:
            self.cache.put(key, value, expires_at=self._clock() + ttl(value))

    async def _with_retries(self, fetch: Callable[[], Awaitable[V]]) -> V:
        try:
            async with asyncio.timeout(self._deadline):
                return await self._attempts(fetch)
        except TimeoutError:
            raise KubeUnavailable(f"review not answered within {self._deadline:g}s (retries included)") from None

    async def _attempts(self, fetch: Callable[[], Awaitable[V]]) -> V:
        delay = 0.5
        for attempt in range(self._steps):
            try:
                return await fetch()
            except (KubeUnavailable, KubeAPIError) as err:
                if attempt == self._steps - 1 or not _transient(err):
                    raise
            await self._sleep(delay)
            delay *= 1.5
        raise AssertionError("unreachable")


class TokenReviewer:
    def __init__(self, client: KubeClient, *, ttl: float = 10.0, max_entries: int = 10_000,
                 audiences: tuple[str, ...] = (), clock: Callable[[], float] = time.monotonic,
                 retry_steps: int = 5, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 deadline: float = REVIEW_DEADLINE) -> None:
        self._client = client
        self._ttl = ttl
        self._audiences = audiences
        self._calls: _CachedCaller[bytes, TokenResult] = _CachedCaller(
            max_entries=max_entries, clock=clock, retry_steps=retry_steps, sleep=sleep, deadline=deadline)

    async def review(self, token: str) -> TokenResult:
        key = hashlib.sha256(token.encode()).digest()
        return await self._calls.call(key, lambda: self._fetch(token), lambda _: self._ttl)

    async def _fetch(self, token: str) -> TokenResult:
        spec: dict[str, Any] = {"token": token}
        if self._audiences:
            spec["audiences"] = list(self._audiences)
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": spec}
        answer = await self._client.post("/apis/authentication.k8s.io/v1/tokenreviews", body)
        status = _status(answer, "TokenReview", "authenticated")
        if not status.get("authenticated"):
            return TokenResult(authenticated=False, error=str(status.get("error") or "token not authenticated"))
        return TokenResult(authenticated=True, user=UserInfo.from_review(status.get("user") or {}))


class SubjectAccessReviewer:
    def __init__(self, client: KubeClient, *, allowed_ttl: float = 10.0, denied_ttl: float = 10.0,
                 max_entries: int = 10_000, clock: Callable[[], float] = time.monotonic,
                 retry_steps: int = 5, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 deadline: float = REVIEW_DEADLINE) -> None:
        self._client = client
        self._allowed_ttl = allowed_ttl
        self._denied_ttl = denied_ttl
        self._calls: _CachedCaller[str, AccessDecision] = _CachedCaller(
            max_entries=max_entries, clock=clock, retry_steps=retry_steps, sleep=sleep, deadline=deadline)

    async def review(self, spec: Mapping[str, Any]) -> AccessDecision:
        key = json.dumps(spec, sort_keys=True, separators=(",", ":"))
        return await self._calls.call(key, lambda: self._fetch(spec), self._ttl,
                                      cacheable=len(key) <= _MAX_CACHEABLE_KEY)

    def _ttl(self, decision: AccessDecision) -> float:
        return self._allowed_ttl if decision.allowed else self._denied_ttl

    async def _fetch(self, spec: Mapping[str, Any]) -> AccessDecision:
        body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": dict(spec)}
        answer = await self._client.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", body)
        status = _status(answer, "SubjectAccessReview", "allowed", "denied")
        return AccessDecision(allowed=bool(status.get("allowed")), denied=bool(status.get("denied")),
                              reason=str(status.get("reason") or ""),
                              evaluation_error=str(status.get("evaluationError") or ""))
