"""The aggregation layer: proxy /apis/<group>/<version>/... to APIService backends, and keep
each APIService's `Available` condition from probing its backend.

What kube-aggregator does (aggregated-apiserver.md §0, §4): resolve `spec.service` to an address
(the `--service` table first, else the Service's port and a ready address of its Endpoints or
EndpointSlices, as kube-proxy would), open TLS with ServerName `<name>.<namespace>.svc`,
verifying against `caBundle` unless `insecureSkipTLSVerify`, present the front-proxy client
certificate, drop the caller's Authorization/Impersonate-*/X-Remote-* headers and send the
authenticated identity as X-Remote-User / X-Remote-Group / X-Remote-Extra-*. An unavailable
APIService answers 503 `service unavailable`. Probes: GET /apis/<g>/<v> as
system:kube-aggregator/system:masters, any 2xx within 5 s is healthy.
Non-goals: HTTP/2, upgrade requests, retries.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import logging
import ssl
import urllib.parse
from typing import Any

import aiohttp
from aiohttp import web
from multidict import CIMultiDict
from yarl import URL

from kubecommon import tls

from . import discovery_v2
from .rbac import UserInfo
from .state import State
from .store import Event, Obj

APISERVICES = ("apiregistration.k8s.io", "apiservices")
_WATCHED = {APISERVICES, ("", "services"), ("", "endpoints"), ("discovery.k8s.io", "endpointslices")}
_HOP_HEADERS = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
                "trailers", "transfer-encoding", "upgrade", "host", "content-length"}
_STRIP_PREFIXES = ("x-remote-", "impersonate-")
PROBE_USER = UserInfo(name="system:kube-aggregator", groups=("system:masters",))
V2_ACCEPT = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
             "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList")
DISCOVERY_REFRESH_SECONDS = 30.0  # kube-apiserver refreshes every minute; tests like it fresher
log = logging.getLogger("kube_standin.aggregator")


class Unresolvable(Exception):
    """The APIService's Service cannot be turned into an address (reason, message)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _escape_extra_key(key: str) -> str:
    """Escape every byte that is not an HTTP token character (and `%`), as kube-aggregator does."""
    safe = set("!#$&'*+-.^_`|~abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    return "".join(c if c in safe else "".join(f"%{b:02X}" for b in c.encode()) for c in key)


def identity_headers(user: UserInfo) -> list[tuple[str, str]]:
    headers = [("X-Remote-User", user.name)]
    headers += [("X-Remote-Group", g) for g in user.groups]
    if user.uid:
        headers.append(("X-Remote-Uid", user.uid))
    for key, values in user.extra.items():
        headers += [(f"X-Remote-Extra-{_escape_extra_key(key)}", v) for v in values]
    return headers


class Aggregator:
    def __init__(self, state: State) -> None:
        self._state = state
        self._session: aiohttp.ClientSession | None = None
        self._contexts: dict[tuple[str, bool], ssl.SSLContext] = {}
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        # APIService name -> (aggregated-discovery resources or None when unusable, fetched at)
        self._discovered: dict[str, tuple[list[dict[str, Any]] | None, float]] = {}
        state.store.on_commit(self._on_commit)

    async def start(self) -> None:
        self._session = aiohttp.ClientSession(auto_decompress=False)
        self._task = asyncio.create_task(self._availability_loop())

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._session:
            await self._session.close()

    def _on_commit(self, storage: tuple[str, str], event: Event) -> None:
        if storage in _WATCHED:
            self._changed.set()

    def remote(self, group: str, version: str) -> Obj | None:
        svc = self._state.store.get(APISERVICES, ("", f"{version}.{group}"))
        if svc is None or not (svc.get("spec") or {}).get("service"):
            return None
        return svc

    # --- resolution and TLS ----------------------------------------------------------------

    def resolve(self, apiservice: Obj) -> tuple[str, int]:
        ref = apiservice["spec"]["service"]
        ns, name, port = ref.get("namespace", ""), ref.get("name", ""), int(ref.get("port") or 443)
        mapped = self._state.options.services.get(f"{ns}/{name}")
        if mapped:
            host, _, p = mapped.rpartition(":")
            return host, int(p)
        store = self._state.store
        service = store.get(("", "services"), (ns, name))
        if service is None:
            raise Unresolvable("ServiceNotFound", f'service/{name} in "{ns}" is not present')
        sport = next((p for p in (service.get("spec") or {}).get("ports") or []
                      if int(p.get("port", 0)) == port), None)
        if sport is None:
            raise Unresolvable("ServicePortError", f'service/{name} in "{ns}" is not listening '
                               f"on port {port}")
        address = self._endpoint(ns, name, sport)
        if address is None and store.get(("", "endpoints"), (ns, name)) is None and not any(
                (eps["metadata"].get("labels") or {}).get("kubernetes.io/service-name") == name
                for eps in store.objects(("discovery.k8s.io", "endpointslices"), ns)):
            raise Unresolvable("EndpointsNotFound", f'cannot find endpoints for service/{name} '
                               f'in "{ns}"')
        if address is None:
            raise Unresolvable("MissingEndpoints", f'endpoints for service/{name} in "{ns}" have '
                               f'no addresses with port name "{sport.get("name", "")}"')
        return address

    def _endpoint(self, ns: str, name: str, sport: Obj) -> tuple[str, int] | None:
        store = self._state.store
        port_name = sport.get("name", "")
        endpoints = store.get(("", "endpoints"), (ns, name))
        for subset in (endpoints or {}).get("subsets") or []:
            ports = [p for p in subset.get("ports") or [] if p.get("name", "") == port_name]
            if subset.get("addresses") and ports:
                return subset["addresses"][0]["ip"], int(ports[0]["port"])
        for eps in store.objects(("discovery.k8s.io", "endpointslices"), ns):
            if (eps["metadata"].get("labels") or {}).get("kubernetes.io/service-name") != name:
                continue
            ports = [p for p in eps.get("ports") or [] if p.get("name", "") == port_name]
            for ep in eps.get("endpoints") or []:
                if ports and (ep.get("conditions") or {}).get("ready", True) is not False:
                    return ep["addresses"][0], int(ports[0]["port"])
        return None

    def _ssl(self, apiservice: Obj) -> ssl.SSLContext:
        spec = apiservice["spec"]
        ca_b64, insecure = spec.get("caBundle") or "", bool(spec.get("insecureSkipTLSVerify"))
        key = (ca_b64, insecure)
        if key not in self._contexts:
            ca_pem = base64.b64decode(ca_b64) if ca_b64 else None
            pki = self._state.pki
            ctx = tls.client_ssl_context(ca_pem=ca_pem, insecure=insecure,
                                         cert_file=pki.path("front-proxy-client.crt"),
                                         key_file=pki.path("front-proxy-client.key"))
            ctx.set_alpn_protocols(["http/1.1"])
            self._contexts[key] = ctx
        return self._contexts[key]

    def _target(self, apiservice: Obj, raw_path: str) -> tuple[URL, dict[str, Any]]:
        host, port = self.resolve(apiservice)
        ref = apiservice["spec"]["service"]
        url = URL(f"https://{host}:{port}{raw_path}", encoded=True)
        return url, {"ssl": self._ssl(apiservice),
                     "server_hostname": f"{ref['name']}.{ref['namespace']}.svc"}

    # --- proxying --------------------------------------------------------------------------

    async def proxy(self, request: web.Request, apiservice: Obj, user: UserInfo) -> web.StreamResponse:
        if not _available(apiservice):
            return web.Response(status=503, text="service unavailable\n",
                                content_type="text/plain")
        try:
            url, kwargs = self._target(apiservice, _raw_path(request))
        except Unresolvable:
            return web.Response(status=503, text="service unavailable\n", content_type="text/plain")
        headers = [(k, v) for k, v in request.headers.items()
                   if k.lower() not in _HOP_HEADERS and k.lower() != "authorization"
                   and not k.lower().startswith(_STRIP_PREFIXES)]
        headers += identity_headers(user)
        is_discovery = len([p for p in request.path.split("/") if p]) <= 3
        timeout = aiohttp.ClientTimeout(total=5 if is_discovery else 60)
        assert self._session is not None
        body = await request.read() if request.can_read_body else None
        try:
            async with self._session.request(
                    request.method, url, headers=multidict(headers), data=body,
                    allow_redirects=False, timeout=timeout, **kwargs) as upstream:
                resp = web.StreamResponse(status=upstream.status)
                for k, v in upstream.headers.items():
                    if k.lower() not in _HOP_HEADERS:
                        resp.headers.add(k, v)
                await resp.prepare(request)
                async for chunk in upstream.content.iter_any():
                    await resp.write(chunk)
                await resp.write_eof()
                return resp
        except (aiohttp.ClientError, asyncio.TimeoutError, ssl.SSLError, OSError) as e:
            return web.Response(status=503, text=f"error trying to reach service: {e}\n",
                                content_type="text/plain")

    # --- availability ----------------------------------------------------------------------

    async def _availability_loop(self) -> None:
        interval = self._state.options.availability_interval
        while True:
            self._changed.clear()
            remotes = [s for s in self._state.store.objects(APISERVICES)
                       if (s.get("spec") or {}).get("service")]
            results = await asyncio.gather(*(self._probe(s) for s in remotes))
            # Discovery is fetched before Available turns True, so a client that waited for the
            # condition finds the group-version's resources in aggregated discovery.
            await asyncio.gather(*(self._refresh_discovery(s) for s, r in zip(remotes, results, strict=True)
                                   if r[0]))
            for svc, (ok, reason, message) in zip(remotes, results, strict=True):
                self._set_available(svc["metadata"]["name"], ok, reason, message)
            try:
                await asyncio.wait_for(self._changed.wait(), interval)
            except asyncio.TimeoutError:
                pass

    async def _probe(self, apiservice: Obj) -> tuple[bool, str, str]:
        spec = apiservice["spec"]
        path = f"/apis/{spec['group']}/{spec['version']}"
        try:
            url, kwargs = self._target(apiservice, path)
        except Unresolvable as e:
            return False, e.reason, str(e)
        headers = multidict(identity_headers(PROBE_USER))
        assert self._session is not None
        try:
            async with self._session.get(url, headers=headers, allow_redirects=False,
                                         timeout=aiohttp.ClientTimeout(total=5), **kwargs) as r:
                if 200 <= r.status < 300:
                    return True, "Passed", "all checks passed"
                detail = f"bad status from {url}: {r.status}"
        except (aiohttp.ClientError, asyncio.TimeoutError, ssl.SSLError, OSError) as e:
            detail = f"Get \"{url}\": {e}"
        return False, "FailedDiscoveryCheck", f"failing or missing response from {url}: {detail}"

    # --- discovery (aggregated-apiserver.md §3.3) ------------------------------------------------

    def discovery_resources(self, apiservice: Obj) -> list[dict[str, Any]] | None:
        """The group-version's resources for aggregated discovery; None publishes it Stale."""
        if not _available(apiservice):
            return None
        cached = self._discovered.get(apiservice["metadata"]["name"])
        return cached[0] if cached else None

    async def _refresh_discovery(self, apiservice: Obj) -> None:
        name = apiservice["metadata"]["name"]
        now = asyncio.get_running_loop().time()
        cached = self._discovered.get(name)
        if cached and cached[0] is not None and now - cached[1] < DISCOVERY_REFRESH_SECONDS \
                and _available(apiservice):
            return
        self._discovered[name] = (await self._discover(apiservice), now)

    async def _discover(self, apiservice: Obj) -> list[dict[str, Any]] | None:
        """GET /apis asking for v2; on anything else the legacy GET /apis/<g>/<v> fallback
        (identity system:kube-aggregator with no groups), as kube-apiserver does."""
        spec = apiservice["spec"]
        assert self._session is not None
        timeout = aiohttp.ClientTimeout(total=5)
        try:
            url, kwargs = self._target(apiservice, "/apis")
            headers = multidict(identity_headers(PROBE_USER) + [("Accept", V2_ACCEPT)])
            async with self._session.get(url, headers=headers, timeout=timeout, **kwargs) as r:
                ctype = r.headers.get("Content-Type", "")
                if r.status == 200 and "g=apidiscovery.k8s.io" in ctype \
                        and "as=APIGroupDiscoveryList" in ctype:
                    return _pick_version(await r.json(content_type=None), spec)
            url, kwargs = self._target(apiservice, f"/apis/{spec['group']}/{spec['version']}")
            legacy_user = UserInfo(name=PROBE_USER.name)
            headers = multidict(identity_headers(legacy_user) + [("Accept", "application/json")])
            async with self._session.get(url, headers=headers, timeout=timeout, **kwargs) as r:
                if r.status != 200:
                    log.warning("discovery of %s failed: HTTP %s", apiservice["metadata"]["name"], r.status)
                    return None
                return discovery_v2.from_legacy(await r.json(content_type=None))
        except (aiohttp.ClientError, asyncio.TimeoutError, ssl.SSLError, OSError, ValueError,
                Unresolvable) as e:
            log.warning("discovery of %s failed: %s", apiservice["metadata"]["name"], e)
            return None

    def _set_available(self, name: str, ok: bool, reason: str, message: str) -> None:
        current = self._state.store.get(APISERVICES, ("", name))
        if current is None:
            return
        status = "True" if ok else "False"
        conditions = list((current.get("status") or {}).get("conditions") or [])
        old = next((c for c in conditions if c.get("type") == "Available"), None)
        if old and (old.get("status"), old.get("reason"), old.get("message")) == (status, reason, message):
            return
        cond = {"type": "Available", "status": status, "reason": reason, "message": message,
                "lastTransitionTime": old["lastTransitionTime"] if old and old.get("status") == status
                else self._state.api.now()}
        new = copy.deepcopy(current)
        new.setdefault("status", {})["conditions"] = [c for c in conditions
                                                      if c.get("type") != "Available"] + [cond]
        rt = self._state.types.lookup("apiregistration.k8s.io", "v1", "apiservices")
        assert rt is not None
        self._state.api.update(rt, "", name, new, subresource="status")


def _pick_version(doc: Any, spec: Obj) -> list[dict[str, Any]] | None:
    """Our group-version from a backend's v2 document; missing means published with no
    resources (not an error), as kube-apiserver treats it."""
    for item in (doc or {}).get("items") or []:
        if (item.get("metadata") or {}).get("name") != spec["group"]:
            continue
        for version in item.get("versions") or []:
            if version.get("version") == spec["version"]:
                return list(version.get("resources") or [])
    return []


def _available(apiservice: Obj) -> bool:
    return any(c.get("type") == "Available" and c.get("status") == "True"
               for c in (apiservice.get("status") or {}).get("conditions") or [])


def _raw_path(request: web.Request) -> str:
    # Re-escape the decoded path the way Go's URL.EscapedPath does (`*` becomes %2A); the query
    # goes on as the client encoded it.
    path = urllib.parse.quote(request.path, safe="/:@!$&'()+,;=-._~")
    query = request.rel_url.raw_query_string
    return path + (f"?{query}" if query else "")


def multidict(headers: list[tuple[str, str]]) -> CIMultiDict[str]:
    """Headers keeping repeated names (one X-Remote-Group line per group)."""
    return CIMultiDict(headers)
