"""Start-up, readiness, discovery and aggregation of the real adapter process."""

from __future__ import annotations

import base64
import json
import time

import pytest

from tests.fixtures.adapter import run_adapter, start_adapter
from tests.fixtures.standin import start_standin

pytestmark = [pytest.mark.integration]

RULES = """
rules:
- seriesQuery: 'http_requests_in_flight{namespace!="",pod!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
      pod: {resource: pod}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
externalRules:
- seriesQuery: 'queue_messages_ready{namespace!="",queue!=""}'
  resources:
    overrides:
      namespace: {resource: namespace}
  metricsQuery: 'sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)'
"""
MASTERS = [("X-Remote-User", "system:kube-aggregator"), ("X-Remote-Group", "system:masters")]


@pytest.mark.timeout(30)
def test_bad_rule_file_fails_start_naming_file_rule_and_field(tmp_path):
    bad = tmp_path / "rules.yaml"
    bad.write_text("rules:\n- seriesQuery: 'up'\n  name: {matches: '(', as: x}\n")
    result = run_adapter(f"--config={bad}", "--bind-address=127.0.0.1", "--secure-port=0",
                         "--kubeconfig=/nonexistent")
    assert result.returncode == 1
    assert str(bad) in result.stderr and "rules[0]" in result.stderr and "name.matches" in result.stderr


@pytest.mark.timeout(30)
@pytest.mark.parametrize("args, message", [
    pytest.param(["--authorization-webhook-cache-authorized-ttl=soon"], "--authorization-webhook-cache-authorized-ttl",
                 id="bad duration names the flag"),
    pytest.param(["--tls-cert-file=/x.crt"], "--tls-private-key-file", id="cert without key"),
])
def test_bad_flags_exit_2(tmp_path, args, message):
    (tmp_path / "rules.yaml").write_text("rules: []\n")
    result = run_adapter(f"--config={tmp_path / 'rules.yaml'}", *args)
    assert result.returncode == 2 and message in result.stderr


@pytest.mark.timeout(30)
def test_unusable_kubeconfig_fails_start(tmp_path):
    (tmp_path / "rules.yaml").write_text("rules: []\n")
    result = run_adapter(f"--config={tmp_path / 'rules.yaml'}", "--bind-address=127.0.0.1", "--secure-port=0",
                         f"--cert-dir={tmp_path / 'certs'}", f"--kubeconfig={tmp_path / 'missing'}")
    assert result.returncode == 1 and "missing" in result.stderr


@pytest.mark.timeout(60)
def test_ready_only_after_first_successful_relist(kube_standin, prometheus_factory, tmp_path):
    late = prometheus_factory(start=False)
    with start_adapter(tmp_path, prometheus_url=late.url, kubeconfig=kube_standin.kubeconfig, rules=RULES,
                       ready=False) as adapter:
        time.sleep(0.5)
        reply = adapter.request("/readyz?verbose")
        assert reply.status == 500 and "[-]metric-discovery failed" in reply.text
        assert adapter.request("/livez").status == 200
        late.start()
        adapter.wait_for("/readyz", timeout=20)
        # Ready means "a relist succeeded"; the metrics appear with the relist after the first scrape.
        late.wait_first_scrape()
        deadline = time.monotonic() + 10
        while True:
            listing = adapter.request("/apis/custom.metrics.k8s.io/v1beta1", headers=MASTERS,
                                      cert=kube_standin.front_proxy_client).json()
            if "pods/http_requests_in_flight" in [r["name"] for r in listing["resources"]]:
                break
            assert time.monotonic() < deadline, listing
            time.sleep(0.2)


@pytest.fixture(scope="module")
def running(kube_standin, prometheus, tmp_path_factory):
    with start_adapter(tmp_path_factory.mktemp("adapter-lifecycle"), prometheus_url=prometheus.url,
                       kubeconfig=kube_standin.kubeconfig, rules=RULES) as adapter:
        yield adapter


@pytest.mark.timeout(60)
def test_discovery_documents(running, kube_standin):
    def get(path, **kw):
        return running.request(path, headers=MASTERS, cert=kube_standin.front_proxy_client, **kw)

    groups = get("/apis").json()
    assert groups["kind"] == "APIGroupList"
    assert [g["name"] for g in groups["groups"]] == ["custom.metrics.k8s.io", "external.metrics.k8s.io"]
    for version in ("v1beta1", "v1beta2"):
        listing = get(f"/apis/custom.metrics.k8s.io/{version}").json()
        assert listing["groupVersion"] == f"custom.metrics.k8s.io/{version}"
        assert {"name": "pods/http_requests_in_flight", "singularName": "", "namespaced": True,
                "kind": "MetricValueList", "verbs": ["get"]} in listing["resources"]
    external = get("/apis/external.metrics.k8s.io/v1beta1/").json()
    assert [r["name"] for r in external["resources"]] == ["queue_messages_ready"]
    # kube-aggregator's v2-only probe gets 406 and falls back to the documents above
    v2 = running.request("/apis", cert=kube_standin.front_proxy_client, headers=[
        *MASTERS, ("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")])
    assert v2.status == 406 and v2.json()["reason"] == "NotAcceptable"
    assert get("/apis/metrics.k8s.io/v1beta1").status == 404  # no resourceRules: group not served
    assert get("/openapi/v2").json()["swagger"] == "2.0"
    assert get("/version").json()["gitVersion"].startswith("v")


@pytest.fixture(scope="module")
def private_standin(tmp_path_factory):
    """A stand-in of our own: these tests register APIServices and rewrite the auth ConfigMap."""
    with start_standin(tmp_path_factory.mktemp("private-standin")) as standin:
        yield standin


@pytest.mark.timeout(90)
def test_served_through_the_stand_ins_aggregation(prometheus, private_standin, tmp_path):
    """kube-apiserver (the stand-in) proxies with its front-proxy certificate after checking our
    serving certificate against caBundle by the Service's DNS name; kubectl gets our answers."""
    standin = private_standin
    with start_adapter(tmp_path / "adapter", prometheus_url=prometheus.url, kubeconfig=standin.kubeconfig,
                       rules=RULES, args=["--service-name=prom-adapter",
                                          "--service-namespace=monitoring"]) as adapter:
        standin.register_service("monitoring", "prom-adapter", "127.0.0.1", adapter.port)
        ca_bundle = base64.b64encode(adapter.cert_file.read_bytes()).decode()
        standin.apply({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                       "metadata": {"name": "v1beta1.custom.metrics.k8s.io"},
                       "spec": {"group": "custom.metrics.k8s.io", "version": "v1beta1",
                                "service": {"namespace": "monitoring", "name": "prom-adapter", "port": 443},
                                "caBundle": ca_bundle, "groupPriorityMinimum": 100, "versionPriority": 100}})
        standin.wait_apiservice_available("v1beta1.custom.metrics.k8s.io", timeout=20)
        out = standin.kubectl("get", "--raw", "/apis/custom.metrics.k8s.io/v1beta1")
        assert "pods/http_requests_in_flight" in out.stdout
        out = standin.kubectl("get", "--raw", "/apis/custom.metrics.k8s.io/v1beta1/namespaces/shop/pods/"
                              "web-7d9f8-abcde/http_requests_in_flight")
        (item,) = json.loads(out.stdout)["items"]
        assert item["metricName"] == "http_requests_in_flight"


@pytest.mark.timeout(90)
def test_auth_configmap_changes_apply_without_restart(prometheus, private_standin, tmp_path):
    """kube-apiserver rewrites kube-system/extension-apiserver-authentication when its front-proxy
    settings change; the adapter follows the watch instead of needing a restart.
    (Last in this module: it leaves the private stand-in's front proxy untrusted.)"""
    standin = private_standin
    with start_adapter(tmp_path / "adapter", prometheus_url=prometheus.url, kubeconfig=standin.kubeconfig,
                       rules=RULES) as adapter:
        def status() -> int:
            return adapter.request("/apis/custom.metrics.k8s.io/v1beta1", headers=MASTERS,
                                   cert=standin.front_proxy_client).status

        assert status() == 200
        patch = json.dumps({"data": {"requestheader-allowed-names": '["someone-else"]'}})
        standin.kubectl("-n", "kube-system", "patch", "configmap", "extension-apiserver-authentication",
                        "--type=merge", "-p", patch)
        deadline = time.monotonic() + 10
        while status() != 401:
            assert time.monotonic() < deadline, "allowed names change not applied"
            time.sleep(0.1)
        assert adapter.running
        assert adapter.stop() == 0  # SIGTERM: clean shutdown


@pytest.mark.timeout(60)
def test_insecure_disable_auth_is_explicit_and_loud(kube_standin, tmp_path):
    with start_adapter(tmp_path / "adapter", prometheus_url="http://127.0.0.1:9", kubeconfig=kube_standin.kubeconfig,
                       rules="rules: []\n", ready=False, args=["--insecure-disable-auth"]) as adapter:
        assert adapter.request("/apis/custom.metrics.k8s.io/v1beta1").status == 200  # no credentials at all
        assert "WITHOUT authentication or authorization" in adapter.log_tail()


@pytest.mark.timeout(60)
def test_sigterm_with_shutdown_delay_turns_unready_first(kube_standin, prometheus, tmp_path):
    import signal
    with start_adapter(tmp_path / "adapter", prometheus_url=prometheus.url, kubeconfig=kube_standin.kubeconfig,
                       rules=RULES, args=["--shutdown-delay-duration=3s"]) as adapter:
        adapter.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 2
        while adapter.request("/readyz").status != 500:
            assert time.monotonic() < deadline, "still ready after SIGTERM"
            time.sleep(0.05)
        assert adapter.request("/apis/custom.metrics.k8s.io/v1beta1", headers=MASTERS,
                               cert=kube_standin.front_proxy_client).status == 200  # still serving
        assert adapter.proc.wait(timeout=15) == 0
