"""Bad input never crashes the adapter, never yields a 5xx and never hangs.

Hypothesis sends malformed paths, names, selectors (including attempts to break out of PromQL
quoting), long query strings and odd Accept headers straight to the adapter over TLS, as an
authenticated user (bearer token → TokenReview/SubjectAccessReview against the stand-in), with
Prometheus up. Every answer must come within the timeout, be < 500, and when it is an error be a
metav1.Status whose code is the HTTP code. Injection attempts must never return data.

Examples are derandomized and bounded so the test takes about a minute.
"""

from __future__ import annotations

import http.client
import json
import ssl
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from .conftest import Stack

pytestmark = [pytest.mark.integration, pytest.mark.timeout(180),
              pytest.mark.standin_only("dials the adapter's port directly, past the aggregation layer")]

PREFIXES = ("/apis/custom.metrics.k8s.io/v1beta1", "/apis/custom.metrics.k8s.io/v1beta2",
            "/apis/external.metrics.k8s.io/v1beta1", "/apis/metrics.k8s.io/v1beta1")
KNOWN = ("namespaces", "shop", "payments", "pods", "*", "%2A", "metrics", "nodes", "node-a",
         "deployments.apps", "services", "web-7d9f8-abcde", "http_requests_per_second",
         "app_sessions_active", "queue_messages_ready", "cluster_queue_messages_ready")
# Ways out of a quoted PromQL label value, regex metacharacters, path tricks, encodings.
NASTY = ('"', "\\", '"}', '"} or vector(1) #', '"})or(vector(1))#', '\\"} or on() vector(1)',
         ".*", ".+|web.*", "a|b", "(", ")", "{", "}", "=~", "!~", ",", "'", "`", "..", "%", "%2F",
         "%00", "%0A", "%22", "%5C", "é", "\u202e", "\U0001f600", " ", "a" * 300)
KINDS_200 = {"MetricValueList", "ExternalMetricValueList", "PodMetrics", "PodMetricsList",
             "NodeMetrics", "NodeMetricsList", "APIResourceList"}
MAX_URL = 16 * 1024  # the adapter's limit; longer URLs are refused by the HTTP parser itself

segment_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30)
segments = st.one_of(
    st.sampled_from(KNOWN), st.sampled_from(NASTY), segment_text,
    st.builds(lambda a, b: a + b, st.sampled_from(KNOWN), st.sampled_from(NASTY)),
)
tails = st.lists(segments, max_size=7)
label_values = st.one_of(st.sampled_from(NASTY), segment_text, st.sampled_from(KNOWN))
selectors = st.one_of(
    segment_text,
    st.builds("app={}".format, label_values),
    st.builds("app in ({})".format, label_values),
    st.builds("{}={}".format, label_values, label_values),
    st.builds("method notin ({},{})".format, label_values, label_values),
    st.builds("!{}".format, label_values),
    st.builds("code{}5".format, st.sampled_from([">", "<", ">=", "=="])),
    st.integers(min_value=100, max_value=1500).map(lambda n: ",".join(f"k{i}=v{i}" for i in range(n))),
    st.integers(min_value=1000, max_value=14000).map(lambda n: "app=" + "x" * n),
)
queries = st.dictionaries(
    st.sampled_from(["labelSelector", "metricLabelSelector", "fieldSelector", "timeout", "pretty", "x%"]),
    selectors, max_size=3)
accepts = st.one_of(  # mostly what real clients send, so the paths behind negotiation get fuzzed
    st.just("application/json"), st.just("*/*"), st.just("application/vnd.kubernetes.protobuf, */*"),
    st.sampled_from(["application/json", "*/*", "application/vnd.kubernetes.protobuf, */*",
                     "application/vnd.kubernetes.protobuf", "application/json;as=Table;v=v1;g=meta.k8s.io",
                     "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", "text/html",
                     "", ";;;", "application/json;q=0", "*/*;q=abc", "application/*", "a/b/c"]),
    st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7e), max_size=60),
)


def _quote(segment: str) -> str:
    """Percent-encode everything but a few characters, keeping literal `%xx` tricks literal too."""
    return urllib.parse.quote(segment, safe="*%") if "%" in segment else urllib.parse.quote(segment, safe="*")


class _Client:
    """One persistent HTTPS connection to the adapter, reopened when the server closes it."""

    def __init__(self, stack: Stack) -> None:
        parsed = urllib.parse.urlsplit(stack.adapter.url)
        self._host, self._port = parsed.hostname or "127.0.0.1", parsed.port or 443
        self._ctx = ssl.create_default_context(cafile=str(stack.adapter.cert_file))
        self._ctx.check_hostname = False  # the serving cert names the Service, we dial 127.0.0.1
        self._token = stack.token
        self._conn: http.client.HTTPSConnection | None = None

    def get(self, path: str, accept: str) -> tuple[int, str, bytes]:
        for attempt in (1, 2):
            if self._conn is None:
                self._conn = http.client.HTTPSConnection(self._host, self._port, context=self._ctx, timeout=15)
            try:
                self._conn.request("GET", path, headers={"Accept": accept,
                                                         "Authorization": f"Bearer {self._token}"})
                resp = self._conn.getresponse()
                body = resp.read()
                if resp.getheader("Connection", "").lower() == "close":
                    self.close()
                return resp.status, resp.getheader("Content-Type", ""), body
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.close()
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


@pytest.fixture(scope="module")
def client(stack: Stack) -> Iterator[_Client]:
    made = _Client(stack)
    yield made
    made.close()


def _check(status: int, content_type: str, body: bytes) -> dict[str, Any]:
    assert status < 500, f"{status}: {body[:300]!r}"
    assert content_type.startswith("application/json"), (status, content_type, body[:200])
    doc = json.loads(body)
    if status >= 400:
        assert doc["kind"] == "Status" and doc["code"] == status and doc["status"] == "Failure", doc
        assert doc["reason"], doc
    else:
        assert doc["kind"] in KINDS_200, doc
    return doc


def _url(prefix: str, tail: list[str], query: dict[str, str]) -> str:
    path = prefix + ("/" + "/".join(_quote(s) for s in tail) if tail else "")
    if query:
        path += "?" + urllib.parse.urlencode(query, quote_via=urllib.parse.quote)
    return path[:MAX_URL]


@settings(max_examples=1500, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                 HealthCheck.data_too_large])
@given(prefix=st.sampled_from(PREFIXES), tail=tails, query=queries, accept=accepts)
@example(prefix=PREFIXES[0], tail=["namespaces", "shop", "pods", "*", "app_sessions_active"],
         query={"labelSelector": 'app in (web"}) or vector(1) #)'}, accept="application/json")
@example(prefix=PREFIXES[1], tail=["namespaces", "shop", "pods", "web-7d9f8-abcde", "app_sessions_active"],
         query={"metricLabelSelector": 'pod=~".*'}, accept="*/*")
def test_malformed_requests_get_a_status_never_a_5xx(client: _Client, prefix: str, tail: list[str],
                                                     query: dict[str, str], accept: str) -> None:
    status, content_type, body = client.get(_url(prefix, tail, query), accept)
    event(f"HTTP {status}")  # the distribution shows with --hypothesis-show-statistics
    _check(status, content_type, body)


INJECTIONS = [
    pytest.param("/apis/custom.metrics.k8s.io/v1beta1/namespaces/shop/pods/"
                 + _quote('x"} or vector(1) #') + "/app_sessions_active", id="object name closes the quote"),
    pytest.param("/apis/custom.metrics.k8s.io/v1beta1/namespaces/" + _quote('shop",pod=~".*')
                 + "/pods/*/app_sessions_active", id="namespace adds a matcher"),
    pytest.param("/apis/custom.metrics.k8s.io/v1beta2/namespaces/shop/pods/" + _quote(".*")
                 + "/app_sessions_active", id="object name as a regex"),
    pytest.param("/apis/custom.metrics.k8s.io/v1beta1/namespaces/shop/pods/web-7d9f8-abcde/app_sessions_active?"
                 + urllib.parse.urlencode({"metricLabelSelector": 'pod in (a"}or vector(1)#)'}), id="selector value"),
    pytest.param("/apis/external.metrics.k8s.io/v1beta1/namespaces/" + _quote('x"}or vector(1)#')
                 + "/queue_messages_ready", id="external namespace"),
    pytest.param("/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/queue_messages_ready?"
                 + urllib.parse.urlencode({"labelSelector": "queue in (.*)"}), id="external regex value"),
    pytest.param("/apis/metrics.k8s.io/v1beta1/namespaces/" + _quote('shop"}or vector(1)#') + "/pods",
                 id="resource metrics namespace"),
]


@pytest.mark.parametrize("path", INJECTIONS)
def test_promql_injection_attempts_return_no_data(client: _Client, path: str) -> None:
    doc = _check(*client.get(path, "application/json"))
    assert doc.get("items", []) == [], f"an injection attempt returned data: {doc}"


def test_url_over_the_parser_limit_is_refused_with_4xx(client: _Client) -> None:
    path = "/apis/custom.metrics.k8s.io/v1beta1/namespaces/shop/pods/*/m?labelSelector=app%3D" + "x" * 100_000
    status, _, _ = client.get(path, "application/json")
    # aiohttp's HTTP parser answers before any handler (like Go's net/http with 431); not a Status
    assert 400 <= status < 500
