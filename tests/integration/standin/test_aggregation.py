"""APIService aggregation: the stand-in proxies to a TLS backend started here, with the
front-proxy client certificate and identity headers, verifying the backend with caBundle."""

from __future__ import annotations

import asyncio
import base64
import json
import ssl
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from aiohttp import web

from kubecommon import tls
from tests.fixtures.standin import start_standin

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]
GROUP, VERSION = "custom.metrics.k8s.io", "v1beta1"
APISERVICE = f"{VERSION}.{GROUP}"


@dataclass
class Backend:
    """A TLS aiohttp server trusting the front-proxy CA, recording what reached it."""

    port: int = 0
    ca_pem: bytes = b""
    seen: list[dict] = field(default_factory=list)

    def last_proxied(self) -> dict:
        """The last request that was not an availability probe (probes run concurrently)."""
        return next(r for r in reversed(self.seen) if r["user"] != ["system:kube-aggregator"])

    def app(self) -> web.Application:
        async def handle(request: web.Request) -> web.Response:
            peer = request.transport.get_extra_info("peercert") if request.transport else None
            cn = dict(x[0] for x in peer["subject"])["commonName"] if peer else None
            self.seen.append({"path": request.path, "raw_path": request.rel_url.raw_path,
                              "selector": request.query.get("labelSelector"),
                              "user": request.headers.getall("X-Remote-User", []),
                              "groups": request.headers.getall("X-Remote-Group", []),
                              "accept": request.headers.get("Accept"),
                              "authorization": request.headers.get("Authorization"), "peer_cn": cn})
            # Connection: close leaves no idle TLS connection to tear down at the end.
            return web.json_response(headers={"Connection": "close"}, data={
                                      "kind": "APIResourceList", "apiVersion": "v1",
                                      "groupVersion": f"{GROUP}/{VERSION}", "resources": [
                                          {"name": "pods/requests", "singularName": "",
                                           "namespaced": True, "kind": "MetricValueList",
                                           "verbs": ["get"]}]})
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handle)
        return app


@pytest.fixture(scope="module")
def backend(kube_standin, tmp_path_factory) -> Iterator[Backend]:
    directory: Path = tmp_path_factory.mktemp("backend")
    ca = tls.generate_ca("backend-ca", key_algorithm="ecdsa")
    tls.issue_certificate(ca, "metrics", dns_names=("metrics.custom-metrics.svc",),
                          key_algorithm="ecdsa").write(directory / "tls.crt", directory / "tls.key")
    context = tls.server_ssl_context(directory / "tls.crt", directory / "tls.key",
                                     client_ca_pem=kube_standin.front_proxy_ca.read_bytes())
    state = Backend(ca_pem=ca.cert_pem)
    loop = asyncio.new_event_loop()
    started = threading.Event()
    runner = web.AppRunner(state.app(), access_log=None)

    async def start() -> None:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        state.port = runner.addresses[0][1]
        started.set()

    thread = threading.Thread(target=lambda: (loop.run_until_complete(start()), loop.run_forever()),
                              daemon=True)
    thread.start()
    assert started.wait(5)
    kube_standin.register_service("custom-metrics", "metrics", "127.0.0.1", state.port)
    yield state
    kube_standin.kubectl("delete", "apiservice", APISERVICE, check=False)

    async def shutdown() -> None:
        await runner.cleanup()
        await asyncio.sleep(0.3)  # let TLS transports finish closing before the loop stops
    asyncio.run_coroutine_threadsafe(shutdown(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def _apiservice(ca_bundle: bytes | None) -> dict:
    spec = {"group": GROUP, "version": VERSION, "groupPriorityMinimum": 100, "versionPriority": 100,
            "service": {"namespace": "custom-metrics", "name": "metrics", "port": 443}}
    if ca_bundle is None:
        spec["insecureSkipTLSVerify"] = True
    else:
        spec["caBundle"] = base64.b64encode(ca_bundle).decode()
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": APISERVICE}, "spec": spec}


def _raw(url: str, ca_file: Path, headers: dict[str, str]) -> tuple[int, str]:
    req = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(req, context=ssl.create_default_context(cafile=str(ca_file)),
                                    timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def test_proxy_sends_front_proxy_identity_and_merges_discovery(kube_standin, backend):
    kube_standin.apply(_apiservice(backend.ca_pem))
    svc = kube_standin.wait_apiservice_available(APISERVICE)
    assert [c["reason"] for c in svc["status"]["conditions"] if c["type"] == "Available"] == ["Passed"]
    # The same GET as system:kube-aggregator is also the legacy discovery fetch (Accept:
    # application/json, no groups; asserted at the end), which follows each first probe and may
    # be the last request when the condition is seen at once: probes are the other ones.
    probes = [r for r in backend.seen if r["user"] == ["system:kube-aggregator"]
              and r["path"] == f"/apis/{GROUP}/{VERSION}" and r["accept"] != "application/json"]
    assert probes and probes[-1]["groups"] == ["system:masters"]
    assert probes[-1]["path"] == f"/apis/{GROUP}/{VERSION}" and probes[-1]["peer_cn"] == "front-proxy-client"
    out = kube_standin.kubectl("get", "--raw", f"/apis/{GROUP}/{VERSION}/namespaces/default/pods/*/"
                               "requests?labelSelector=app+in+%28a%2Cb%29%2Ctier%3Dx%2By")
    assert json.loads(out.stdout)["groupVersion"] == f"{GROUP}/{VERSION}"
    seen = backend.last_proxied()
    assert seen["path"] == "/apis/custom.metrics.k8s.io/v1beta1/namespaces/default/pods/*/requests"
    assert seen["raw_path"].endswith("/pods/%2A/requests")  # re-escaped as kube-aggregator does
    assert seen["selector"] == "app in (a,b),tier=x+y"
    assert seen["user"] == ["kubernetes-admin"]
    assert "system:masters" in seen["groups"] and "system:authenticated" in seen["groups"]
    assert seen["peer_cn"] == "front-proxy-client" and seen["authorization"] is None
    # Discovery as kube-apiserver fetches it: /apis asking for v2, then (our backend answers
    # legacy JSON) GET /apis/<g>/<v> as system:kube-aggregator without groups.
    assert any(r["path"] == "/apis" for r in backend.seen)
    assert any(r["path"] == f"/apis/{GROUP}/{VERSION}" and r["user"] == ["system:kube-aggregator"]
               and r["groups"] == [] and r["accept"] == "application/json" for r in backend.seen)
    code, body = _raw(f"{kube_standin.url}/apis", kube_standin.ca_file, {
        "Authorization": f"Bearer {kube_standin.admin_token}",
        "Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"})
    assert code == 200, body
    [item] = [i for i in json.loads(body)["items"] if i["metadata"]["name"] == GROUP]
    [version] = item["versions"]
    assert (version["version"], version["freshness"]) == (VERSION, "Current")
    [pods] = version["resources"]
    assert pods["resource"] == "pods" and pods["scope"] == "Namespaced"
    assert pods["subresources"] == [{"subresource": "requests", "verbs": ["get"], "responseKind": {
        "group": GROUP, "version": VERSION, "kind": "MetricValueList"}}]
    groups = json.loads(kube_standin.kubectl("get", "--raw", "/apis").stdout)["groups"]
    assert {"name": GROUP, "versions": [{"groupVersion": f"{GROUP}/{VERSION}", "version": VERSION}],
            "preferredVersion": {"groupVersion": f"{GROUP}/{VERSION}", "version": VERSION}} in groups


def test_spoofed_identity_headers_are_not_trusted(kube_standin, backend):
    kube_standin.apply(_apiservice(backend.ca_pem))
    kube_standin.wait_apiservice_available(APISERVICE)
    url = f"{kube_standin.url}/apis/{GROUP}/{VERSION}/namespaces/default/pods/*/requests"
    spoof = {"X-Remote-User": "system:admin", "X-Remote-Group": "system:masters"}
    before = len([r for r in backend.seen if r["path"].endswith("/requests")])
    code, body = _raw(url, kube_standin.ca_file, spoof)  # no credentials: anonymous
    assert code == 403 and json.loads(body)["reason"] == "Forbidden"
    assert 'User "system:anonymous"' in json.loads(body)["message"]
    # never reached the backend
    assert len([r for r in backend.seen if r["path"].endswith("/requests")]) == before
    code, _ = _raw(url, kube_standin.ca_file,
                   {**spoof, "Authorization": f"Bearer {kube_standin.admin_token}"})
    assert code == 200
    assert backend.last_proxied()["user"] == ["kubernetes-admin"]
    assert not any(r["user"] == ["system:admin"] for r in backend.seen)


def test_wrong_ca_bundle_makes_the_apiservice_unavailable(kube_standin, backend):
    wrong = tls.generate_ca("someone-else", key_algorithm="ecdsa").cert_pem
    kube_standin.apply(_apiservice(wrong))
    svc = kube_standin.wait_apiservice_available(APISERVICE, want="False")
    cond = next(c for c in svc["status"]["conditions"] if c["type"] == "Available")
    assert cond["reason"] == "FailedDiscoveryCheck"
    out = kube_standin.kubectl("get", "--raw", f"/apis/{GROUP}/{VERSION}", check=False)
    assert out.returncode == 1 and "ServiceUnavailable" in out.stderr
    insecure = _apiservice(None)
    kube_standin.kubectl("replace", "-f", "-", input=json.dumps(insecure))
    kube_standin.wait_apiservice_available(APISERVICE)


def test_service_flag_routes_without_service_objects(kube_standin, backend, tmp_path):
    # Same certificate directory: the private instance presents the front-proxy certificate
    # the backend already trusts. The backend's certificate names metrics.custom-metrics.svc,
    # not flagged.custom-metrics.svc, hence insecureSkipTLSVerify.
    flag = f"custom-metrics/flagged=127.0.0.1:{backend.port}"
    with start_standin(tmp_path, "--service", flag, "--availability-interval", "0.2",
                       data_dir=kube_standin.data_dir) as private:
        apiservice = _apiservice(None)
        apiservice["spec"]["service"]["name"] = "flagged"
        private.apply(apiservice)
        private.wait_apiservice_available(APISERVICE)
        out = private.kubectl("get", "--raw", f"/apis/{GROUP}/{VERSION}")
        assert json.loads(out.stdout)["groupVersion"] == f"{GROUP}/{VERSION}"
        assert backend.last_proxied()["user"] == ["kubernetes-admin"]
