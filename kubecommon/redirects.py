"""Redirects followed by hand, so credentials stay with the origin they were configured for.

aiohttp drops `Authorization` when a redirect leads to another origin, but keeps every other
header: a tenant header (`X-Scope-OrgID`) or any `--prometheus-header` (an API key, a routing
secret) would reach whatever host a proxy or a compromised backend points at. Here a hop to
another origin (scheme, host, port) goes without `Authorization` and without the configured
headers; a hop within the origin keeps them. The method changes as aiohttp (and Go's net/http)
change it: 303 (and 301/302 after a POST) go on as a GET without the body.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Collection, Mapping

import aiohttp
from yarl import URL

__all__ = ["MAX_REDIRECTS", "TooManyRedirects", "request_following_redirects"]

MAX_REDIRECTS = 10
_REDIRECTS = frozenset({301, 302, 303, 307, 308})


class TooManyRedirects(aiohttp.ClientError):
    """More than `MAX_REDIRECTS` hops."""


@contextlib.asynccontextmanager
async def request_following_redirects(
    session: aiohttp.ClientSession, method: str, url: str, *, headers: Mapping[str, str],
    sensitive: Collection[str], data: str | None = None, timeout: aiohttp.ClientTimeout,
) -> AsyncIterator[aiohttp.ClientResponse]:
    """The final response of `method url`; `sensitive` (lower-case header names) are sent only to
    the origin of `url`."""
    origin = URL(url).origin()
    target, sent = URL(url, encoded=True), dict(headers)
    for _ in range(MAX_REDIRECTS + 1):
        resp = await session.request(method, target, data=data, headers=sent, timeout=timeout,
                                     allow_redirects=False)
        location = resp.headers.get("Location") if resp.status in _REDIRECTS else None
        if location is None:
            try:
                yield resp
            finally:
                resp.release()
            return
        resp.release()
        target = resp.url.join(URL(location, encoded=True))
        if resp.status == 303 or (resp.status in (301, 302) and method == "POST"):
            method, data = "GET", None
            sent.pop("Content-Type", None)
        if target.origin() != origin:
            sent = {name: value for name, value in sent.items() if name.lower() not in sensitive}
    raise TooManyRedirects(f"more than {MAX_REDIRECTS} redirects")
