"""The assembled app (routes + middleware) in process: Status errors, auth order, negotiation,
discovery, health and /metrics. TLS and real subprocesses are covered by integration tests."""

import asyncio
import contextlib
import json

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from adapter.discovery.registry import CustomMetricInfo, ExternalMetricInfo
from kubecommon.kube import errors as kube_errors
from kubecommon.kube.identity import UserInfo
from kubecommon.kube.reviews import AccessDecision, TokenResult
from adapter.prometheus import errors as prom_errors
from adapter.rules.resources import GroupResource
from adapter.server.authn import Authenticator, AuthnSettings
from adapter.server.authz import Authorizer
from adapter.server.context import Groups, ServerContext
from adapter.server.routes import Services, build_app
from adapter.server.telemetry import Telemetry
from kubecommon.selectors import parse_selector
from kubecommon.status import Conflict

GV = "/apis/custom.metrics.k8s.io/v1beta1"


class Tokens:
    USERS = {"admin": UserInfo(name="admin", groups=("system:masters",)),
             "reader": UserInfo(name="reader"), "nobody": UserInfo(name="nobody")}

    async def review(self, token):
        user = self.USERS.get(token)
        return TokenResult(authenticated=user is not None, user=user)


class Reviews:
    def __init__(self):
        self.specs = []
        self.fail = False

    async def review(self, spec):
        self.specs.append(spec)
        if self.fail:
            raise kube_errors.KubeUnavailable("apiserver down")
        return AccessDecision(allowed=spec["user"] == "reader", reason="" if spec["user"] == "reader" else "no RBAC")


class Snapshot:
    def __init__(self, custom=(), external=()):
        self._custom, self._external = tuple(custom), tuple(external)

    def custom_metrics(self):
        return self._custom

    def external_metrics(self):
        return self._external


class State:
    def __init__(self):
        self.ready = False
        self.snapshot = Snapshot()


async def _boom(request):
    raise {"status": Conflict("already there"), "selector": _selector_error(),
           "unknown-resource": kube_errors.UnknownResource("x", "widgets"),
           "kube-down": kube_errors.CacheNotSynced("not synced"),
           "kube-forbidden": kube_errors.KubeAPIError(Conflict("x"), method="GET", path="/api/v1/pods"),
           "prom-down": prom_errors.PrometheusUnreachable("http://secret-host:9090 refused"),
           "prom-bad": prom_errors.PrometheusBadResponse("garbage from http://secret-host"),
           "bug": ZeroDivisionError("secret detail")}[request.match_info["kind"]]


def _selector_error():
    try:
        parse_selector("a b")
    except ValueError as err:
        return err


@pytest.fixture
def state():
    return State()


@pytest.fixture
def reviews():
    return Reviews()


@pytest.fixture
async def client(state, reviews):
    ctx = ServerContext(
        telemetry=Telemetry(), authenticator=Authenticator(AuthnSettings(), Tokens()),
        authorizer=Authorizer(reviews), groups=Groups(resource=True), registry=lambda: state.snapshot,
        readiness={"metric-discovery": lambda: (state.ready, "not yet")},
        version={"gitVersion": "v0.1.0", "major": "0", "minor": "1"})
    app = build_app(ctx, Services())
    app.router.add_get("/apis/custom.metrics.k8s.io/v1beta1/namespaces/ns/pods/*/{kind}", _boom)
    async with TestClient(TestServer(app, host="127.0.0.1")) as test_client:
        yield test_client


def auth(token="reader", **extra):
    return {"Authorization": f"Bearer {token}", **extra}


async def status_of(response):
    assert response.headers["Content-Type"].startswith("application/json")
    body = await response.json()
    assert body["kind"] == "Status" and body["apiVersion"] == "v1" and body["status"] == "Failure"
    assert body["code"] == response.status
    return body


async def test_no_credentials_on_an_api_path_is_401(client, reviews):
    response = await client.get(GV)
    body = await status_of(response)
    assert (response.status, body["reason"], body["message"]) == (401, "Unauthorized", "Unauthorized")
    assert reviews.specs == []


async def test_anonymous_mode_sends_anonymous_to_review(state, reviews):
    ctx = ServerContext(telemetry=Telemetry(), authenticator=Authenticator(AuthnSettings(), Tokens()),
                        authorizer=Authorizer(reviews), anonymous=True, groups=Groups(),
                        registry=lambda: state.snapshot)
    async with TestClient(TestServer(build_app(ctx, Services()), host="127.0.0.1")) as anon_client:
        response = await anon_client.get(GV)
        body = await status_of(response)
    assert response.status == 403
    assert body["message"] == f'forbidden: User "system:anonymous" cannot get path "{GV}": no RBAC'
    assert reviews.specs[0]["groups"] == ["system:unauthenticated"]


async def test_bad_token_is_401(client):
    response = await client.get(GV, headers=auth("forged"))
    assert response.status == 401
    assert (await status_of(response))["reason"] == "Unauthorized"


async def test_unrouted_path_still_needs_credentials(client):
    assert (await client.get("/apis/nothing/v1/x", headers=auth("forged"))).status == 401
    response = await client.get("/apis/nothing/v1/x", headers=auth())
    body = await status_of(response)
    assert (response.status, body["reason"], body["message"]) == (
        404, "NotFound", "the server could not find the requested resource")


@pytest.mark.parametrize("path", ["/healthz", "/livez"])
async def test_health_without_credentials(client, path, reviews):
    response = await client.get(path)
    assert (response.status, await response.text()) == (200, "ok")
    assert reviews.specs == []


async def test_readyz_follows_first_relist(client, state):
    response = await client.get("/readyz")
    assert response.status == 500
    assert "[-]metric-discovery failed" in await response.text()
    state.ready = True
    response = await client.get("/readyz")
    assert (response.status, await response.text()) == (200, "ok")


async def test_masters_are_not_reviewed(client, reviews):
    response = await client.get(GV, headers=auth("admin"))
    assert response.status == 200
    assert reviews.specs == []


async def test_sar_outage_is_500(client, reviews):
    reviews.fail = True
    response = await client.get(GV, headers=auth())
    assert response.status == 500
    assert (await status_of(response))["reason"] == "InternalError"


@pytest.mark.parametrize("accept, code", [
    pytest.param("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", 406, id="v2 only"),
    pytest.param("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json", 200,
                 id="v2 with json fallback"),
    pytest.param("application/vnd.kubernetes.protobuf", 406, id="protobuf only"),
])
async def test_apis_negotiation(client, accept, code):
    response = await client.get("/apis", headers=auth("admin", Accept=accept))
    assert response.status == code
    if code == 406:
        assert (await status_of(response))["reason"] == "NotAcceptable"


async def test_post_is_405_status(client):
    response = await client.post(GV, headers=auth("admin"))
    assert response.status == 405
    assert (await status_of(response))["reason"] == "MethodNotAllowed"


@pytest.mark.parametrize("kind, code, reason, message", [
    pytest.param("status", 409, "Conflict", "already there", id="StatusError as is"),
    pytest.param("selector", 400, "BadRequest", None, id="selector error"),
    pytest.param("unknown-resource", 404, "NotFound", "the server could not find the requested resource",
                 id="unknown resource"),
    pytest.param("kube-down", 503, "ServiceUnavailable", None, id="watch cache not synced"),
    pytest.param("kube-forbidden", 500, "InternalError", "Internal error occurred: unable to list matching resources",
                 id="kubernetes API error"),
    pytest.param("prom-down", 503, "ServiceUnavailable", None, id="prometheus unreachable"),
    pytest.param("prom-bad", 500, "InternalError", "Internal error occurred: unable to fetch metrics",
                 id="prometheus garbage"),
    pytest.param("bug", 500, "InternalError", None, id="our bug"),
])
async def test_error_mapping(client, kind, code, reason, message):
    response = await client.get(f"/apis/custom.metrics.k8s.io/v1beta1/namespaces/ns/pods/%2A/{kind}",
                                headers=auth("admin"))
    body = await status_of(response)
    assert (response.status, body["reason"]) == (code, reason)
    if message:
        assert body["message"] == message
    assert "secret" not in json.dumps(body)


async def test_discovery_documents(client, state):
    state.snapshot = Snapshot(
        custom=[CustomMetricInfo(resource=GroupResource(group="", resource="pods"), metric="rps", namespaced=True),
                CustomMetricInfo(resource=GroupResource(group="apps", resource="deployments"), metric="rps",
                                 namespaced=True),
                CustomMetricInfo(resource=GroupResource(group="", resource="namespaces"), metric="q",
                                 namespaced=False)],
        external=[ExternalMetricInfo(metric="queue_len")])
    groups = await (await client.get("/apis", headers=auth("admin"))).json()
    assert [g["name"] for g in groups["groups"]] == ["custom.metrics.k8s.io", "external.metrics.k8s.io",
                                                     "metrics.k8s.io"]
    assert groups["groups"][0]["preferredVersion"]["version"] == "v1beta2"
    for path in (f"{GV}", f"{GV}/"):
        listing = await (await client.get(path, headers=auth("admin"))).json()
        assert listing["kind"] == "APIResourceList" and listing["groupVersion"] == "custom.metrics.k8s.io/v1beta1"
        assert [(r["name"], r["namespaced"]) for r in listing["resources"]] == [
            ("deployments.apps/rps", True), ("namespaces/q", False), ("pods/rps", True)]
    external = await (await client.get("/apis/external.metrics.k8s.io/v1beta1", headers=auth("admin"))).json()
    assert external["resources"] == [{"name": "queue_len", "singularName": "", "namespaced": True,
                                      "kind": "ExternalMetricValueList", "verbs": ["get"]}]


async def test_discovery_never_empty(client):
    for gv in (GV, "/apis/custom.metrics.k8s.io/v1beta2", "/apis/external.metrics.k8s.io/v1beta1",
               "/apis/metrics.k8s.io/v1beta1"):
        listing = await (await client.get(gv, headers=auth("admin"))).json()
        assert listing["resources"], gv


async def test_openapi_documents(client):
    v2 = await (await client.get("/openapi/v2", headers=auth("admin", Accept="application/json"))).json()
    assert v2["swagger"] == "2.0" and any(p.startswith(GV) for p in v2["paths"])
    index = await (await client.get("/openapi/v3", headers=auth("admin"))).json()
    url = index["paths"]["apis/custom.metrics.k8s.io/v1beta2"]["serverRelativeURL"]
    response = await client.get(url, headers=auth("admin"))
    assert response.status == 200 and response.headers["ETag"]
    assert (await response.json())["openapi"] == "3.0.0"


async def test_metrics_endpoint_counts_requests(client):
    await client.get(GV, headers=auth())
    await client.get("/apis/custom.metrics.k8s.io/v1beta1/namespaces/ns/pods/*/bug", headers=auth("admin"))
    response = await client.get("/metrics", headers=auth())
    text = await response.text()
    assert response.status == 200 and response.headers["Content-Type"].startswith("text/plain")
    assert 'prom_autoscaler_adapter_requests_total{code="200",group="",verb="get",version=""}' in text
    assert ('prom_autoscaler_adapter_requests_total{code="500",group="custom.metrics.k8s.io",verb="get",'
            'version="v1beta1"} 1.0') in text
    assert ('prom_autoscaler_adapter_request_duration_seconds_count{code="500",group="custom.metrics.k8s.io",'
            'verb="get"} 1.0') in text


async def test_very_long_url_is_a_status_not_a_hang(client):
    response = await client.get(GV + "?labelSelector=" + "a" * 40_000, headers=auth("admin"))
    assert response.status == 400
    assert (await status_of(response))["reason"] == "BadRequest"


async def test_version(client):
    body = await (await client.get("/version", headers=auth("admin"))).json()
    assert body["gitVersion"] == "v0.1.0"


async def test_requests_beyond_max_inflight_get_429_but_probes_pass(state):
    import asyncio
    release = asyncio.Event()
    entered = asyncio.Event()

    async def slow(_):
        entered.set()
        await release.wait()
        from aiohttp import web
        return web.Response(text="done")

    ctx = ServerContext(telemetry=Telemetry(), authenticator=None, authorizer=None, groups=Groups(),
                        registry=lambda: state.snapshot, max_inflight=1,
                        readiness={"metric-discovery": lambda: (True, "")})
    app = build_app(ctx, Services())
    app.router.add_get("/slow", slow)
    async with TestClient(TestServer(app, host="127.0.0.1")) as limited:
        first = asyncio.create_task(limited.get("/slow"))
        await entered.wait()
        response = await limited.get(GV)
        body = await status_of(response)
        assert (response.status, body["reason"], response.headers["Retry-After"]) == (429, "TooManyRequests", "1")
        assert (await limited.get("/readyz")).status == 200
        release.set()
        assert (await first).status == 200
        assert (await limited.get(GV)).status == 200


class _Limited:
    """An authenticating app with --max-requests-inflight=1 whose /slow handler holds the one slot."""

    def __init__(self):
        self.http: TestClient | None = None
        self.entered, self.release = asyncio.Event(), asyncio.Event()

    async def slow(self, _request):
        self.entered.set()
        await self.release.wait()
        return web.Response(text="done")

    @contextlib.asynccontextmanager
    async def holding(self):
        """Within the block, a request holds the one in-flight slot; it completes on leaving."""
        self.entered.clear()
        self.release.clear()
        held = asyncio.create_task(self.http.get("/slow", headers=auth("admin")))
        await self.entered.wait()
        try:
            yield
        finally:
            self.release.set()
            response = await held  # also when the block failed: no request left behind
        assert (response.status, await response.text()) == (200, "done")


@pytest.fixture
async def limited(state, reviews):
    state.ready = True
    ctx = ServerContext(
        telemetry=Telemetry(), authenticator=Authenticator(AuthnSettings(), Tokens()),
        authorizer=Authorizer(reviews), anonymous=False, groups=Groups(), registry=lambda: state.snapshot,
        readiness={"metric-discovery": lambda: (True, "")}, max_inflight=1)
    app = build_app(ctx, Services())
    app.router.add_get("/apis/custom.metrics.k8s.io/v1beta1/namespaces/ns/pods/*/{kind}", _boom)
    fixture = _Limited()
    app.router.add_get("/slow", fixture.slow)
    async with TestClient(TestServer(app, host="127.0.0.1")) as test_client:
        fixture.http = test_client
        yield fixture


async def _expect_429(response):
    body = await status_of(response)
    assert (response.status, body["reason"], body["message"]) == (
        429, "TooManyRequests", "Too many requests, please try again later.")
    assert body["details"]["retryAfterSeconds"] == 1
    assert response.headers["Retry-After"] == "1"


async def test_while_inflight_is_full_requests_without_credentials_get_401_not_429(limited, reviews):
    # kube-apiserver authenticates before max-in-flight: a flood of unauthenticated requests is told
    # 401 (fix your credentials), not 429 (retry later), and never takes a slot.
    async with limited.holding():
        for headers in ({}, {"Authorization": "Bearer not-a-known-token"}):
            response = await limited.http.get(GV, headers=headers)
            body = await status_of(response)
            assert (response.status, body["reason"], body["message"]) == (401, "Unauthorized", "Unauthorized")
            assert "Retry-After" not in response.headers
    assert reviews.specs == []


async def test_while_inflight_is_full_authenticated_requests_get_429_before_any_access_review(limited, reviews):
    async with limited.holding():
        await _expect_429(await limited.http.get(GV, headers=auth("admin")))
        # authorization (a SubjectAccessReview against the Kubernetes API) only runs within the limit
        await _expect_429(await limited.http.get(GV, headers=auth("reader")))
        await _expect_429(await limited.http.get(GV, headers=auth("nobody")))
        assert reviews.specs == []
        for probe in ("/healthz", "/livez", "/readyz"):
            assert (await limited.http.get(probe)).status == 200, probe
    response = await limited.http.get(GV, headers=auth("reader"))
    assert response.status == 200
    assert [spec["user"] for spec in reviews.specs] == ["reader"]
    # the refused requests and the probes gave back no slot they had not taken: still exactly one
    async with limited.holding():
        await _expect_429(await limited.http.get(GV, headers=auth("admin")))


async def test_forbidden_is_403_within_the_limit_and_no_outcome_leaks_the_inflight_slot(limited, reviews):
    response = await limited.http.get(f"{GV}/namespaces/ns/pods/*/rps", headers=auth("nobody"))
    body = await status_of(response)
    assert (response.status, body["reason"]) == (403, "Forbidden")
    assert body["message"] == ('pods.custom.metrics.k8s.io "*" is forbidden: User "nobody" cannot get resource '
                               '"pods/rps" in API group "custom.metrics.k8s.io" in the namespace "ns": no RBAC')
    assert body["details"] == {"name": "*", "kind": "pods", "group": "custom.metrics.k8s.io"}
    # With one slot, a single leaked slot would turn every later request into 429.
    outcomes = [
        (GV, auth("nobody"), 403),  # denied by RBAC
        (f"{GV}/namespaces/ns/pods/*/bug", auth("admin"), 500),  # the handler raised
        (f"{GV}/namespaces/ns/pods/*/status", auth("admin"), 409),  # the handler raised a Status
        ("/apis", auth("admin", Accept="application/vnd.kubernetes.protobuf"), 406),  # refused after the slot
        (GV, {}, 401),  # refused before the slot
        ("/readyz", {}, 200),  # never counted
    ]
    for path, headers, code in outcomes * 2:
        response = await limited.http.get(path, headers=headers)
        assert response.status == code, path
        assert (await limited.http.get(GV, headers=auth("admin"))).status == 200, f"slot leaked by {path}"
    # ...and none gave a slot back twice: the limit is still exactly one.
    async with limited.holding():
        await _expect_429(await limited.http.get(GV, headers=auth("admin")))
    assert (await limited.http.get(GV, headers=auth("admin"))).status == 200


async def test_metric_labels_stay_bounded_for_made_up_paths(client):
    for i in range(3):
        await client.get(f"/apis/made-up-{i}.example.com/v{i}/namespaces/x/things", headers=auth("admin"))
    text = await (await client.get("/metrics", headers=auth("admin"))).text()
    assert "made-up" not in text
    assert 'prom_autoscaler_adapter_requests_total{code="404",group="other",verb="list",version="other"} 3.0' in text


def test_request_durations_are_measured_to_the_microsecond_under_uvloop(state):
    """The adapter serves on uvloop, whose `loop.time()` counts whole milliseconds: durations taken
    with it are off by up to 1 ms each, a fifth of the first bucket (5 ms). The histogram must see
    the handler's 3 ms of work, measured finer than milliseconds."""
    import time

    import uvloop

    async def busy(request):
        deadline = time.perf_counter() + 0.003
        while time.perf_counter() < deadline:  # work inside one loop iteration, no await
            pass
        return web.Response(text="ok")

    telemetry = Telemetry()

    async def run():
        ctx = ServerContext(telemetry=telemetry, authenticator=None, authorizer=None, groups=Groups(),
                            registry=lambda: state.snapshot)
        app = build_app(ctx, Services())
        app.router.add_get("/busy", busy)
        async with TestClient(TestServer(app, host="127.0.0.1")) as test_client:
            for _ in range(3):
                assert (await test_client.get("/busy")).status == 200

    uvloop.run(run())
    total = telemetry.registry.get_sample_value("prom_autoscaler_adapter_request_duration_seconds_sum",
                                                {"code": "200", "group": "", "verb": "get"})
    assert total is not None and 0.009 <= total < 1.0
    milliseconds = total * 1000
    assert abs(milliseconds - round(milliseconds)) > 1e-6  # not a sum of whole milliseconds
