"""What the server's middleware and infrastructure handlers read from the application.

One frozen `ServerContext` is stored under `CONTEXT` on the aiohttp app by `routes.build_app`.
Metric handlers (custom/external/resource) keep their services under their own AppKeys.

Non-goals: construction of the parts (adapter.app wires them).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from aiohttp import web

from adapter.discovery.registry import Registry
from kubecommon.kube.identity import UserInfo
from adapter.server import discovery_docs as docs
from adapter.server.authn import Authenticator
from adapter.server.authz import Authorizer
from kubecommon.requestinfo import RequestInfo, derive_request_info
from adapter.server.telemetry import Telemetry
from kubecommon.lru import LRUCache

__all__ = ["CONTEXT", "INFLIGHT", "KEPT_REQUEST_INFOS", "REQUEST_INFO", "REQUEST_INFOS", "USER", "Groups",
           "Inflight", "RequestInfos", "ServerContext"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Groups:
    """Which API groups this server answers (metrics.k8s.io only with resourceRules)."""

    custom: bool = True
    external: bool = True
    resource: bool = False

    def served(self) -> tuple[str, ...]:
        """The names of the served groups, in discovery order."""
        return tuple(group for group, on in ((docs.CUSTOM, self.custom), (docs.EXTERNAL, self.external),
                                             (docs.RESOURCE, self.resource)) if on)


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerContext:
    telemetry: Telemetry
    # None means authentication and authorization are disabled (--insecure-disable-auth).
    authenticator: Authenticator | None
    authorizer: Authorizer | None
    # Like kube-apiserver's --anonymous-auth: when False, a request without credentials gets 401
    # unless its path is always allowed (health probes); when True it continues as system:anonymous.
    anonymous: bool = False
    groups: Groups
    # () -> the registry snapshot discovery serves now (swapped whole on each relist)
    registry: Callable[[], Registry]
    # name -> () -> (ok, reason); /readyz fails while any check fails
    readiness: Mapping[str, Callable[[], tuple[bool, str]]] = field(default_factory=dict)
    version: Mapping[str, str] = field(default_factory=dict)
    max_url_length: int = 16 * 1024
    # Like kube-apiserver's --max-requests-inflight: beyond this many concurrent requests, 429.
    max_inflight: int = 400


@dataclass(frozen=False, slots=True)  # frozen=False: the one counter the middleware updates
class Inflight:
    current: int = 0


#: request attributes kept per server: an HPA sends the same request every sync period
KEPT_REQUEST_INFOS = 1024


class RequestInfos(LRUCache[tuple[str, str, str], RequestInfo]):
    """`derive_request_info` answers by (method, decoded path, raw query string): pure and
    immutable, and worth ~30 µs a request to keep. A request it refuses keeps nothing."""

    def derive(self, request: web.BaseRequest) -> RequestInfo:
        return self.get_or_compute((request.method, request.path, request.query_string),
                                   lambda: derive_request_info(request.method, request.path, request.query))


CONTEXT = web.AppKey("server_context", ServerContext)
INFLIGHT = web.AppKey("inflight", Inflight)
REQUEST_INFOS = web.AppKey("request_infos", RequestInfos)
# Per-request values set by the middleware.
REQUEST_INFO = web.RequestKey("request_info", RequestInfo)
USER = web.RequestKey("user", UserInfo)
