"""`python -m controller` against the real API-server stand-in: probes, /metrics, status written,
and who may read its endpoints.

The stand-in serves the PromAutoscaler CRD from the chart (applied with kubectl) and a Deployment
with its /scale. No metrics APIs are registered, so the object's External metric cannot be read:
the controller must say so in status (ScalingActive=False) and leave the Deployment alone, while
/healthz, /readyz and /metrics answer. The metrics port is HTTPS and checks each bearer token with
the stand-in (TokenReview, then SubjectAccessReview for the path), so RBAC made with kubectl decides
who reads /metrics and /debug.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from hack.stack.controller_stack import wait_until
from hack.stack.processes import free_port, terminate
from kubecommon import tls
from kubecommon.tls import client_ssl_context
from tests.fixtures.standin import StandIn
from tests.integration.standin.manifests import deployment
from tests.paths import REPO

CRD = REPO / "charts" / "prom-autoscaler" / "crds" / "promautoscalers.yaml"
PAS = "promautoscalers.autoscaling.prom-autoscaler.io"
_UNVERIFIED = client_ssl_context(insecure=True)


def _eventually(check: Callable[[], Any], timeout: float, what: str) -> Any:
    return wait_until(check, timeout=timeout, what=what)


def _get(port: int, path: str, token: str = "") -> tuple[int, str]:
    """GET over HTTPS (the controller's self-signed certificate), with `token` as bearer if given."""
    request = urllib.request.Request(f"https://127.0.0.1:{port}{path}",
                                     headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=2, context=_UNVERIFIED) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
    except OSError:
        return 0, ""


def _write_serving_cert(directory: Path, ca_name: str) -> bytes:
    """A CA and a serving certificate it signed for 127.0.0.1 as tls.crt/tls.key; the CA's PEM."""
    ca = tls.generate_ca(ca_name, key_algorithm="ecdsa")
    leaf = tls.issue_certificate(ca, "controller", ip_addresses=["127.0.0.1"], key_algorithm="ecdsa")
    directory.mkdir(exist_ok=True)
    (directory / "tls.key").write_bytes(leaf.key_pem)
    (directory / "tls.crt").write_bytes(leaf.cert_pem)
    return ca.cert_pem


@pytest.fixture
def serving_ca(tmp_path: Path) -> bytes:
    """A serving certificate in tmp_path/tls, for a controller started with `{tmp}/tls/...` flags."""
    return _write_serving_cert(tmp_path / "tls", "first-ca")


@pytest.fixture
def controller(request: pytest.FixtureRequest, kube_standin: StandIn, standin_namespace: str,
               tmp_path: Path) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """The controller against the stand-in; an indirect parameter adds flags (`{tmp}`: tmp_path)."""
    extra = [flag.format(tmp=tmp_path) for flag in getattr(request, "param", ())]
    kube_standin.kubectl("apply", "-f", str(CRD))
    _eventually(lambda: kube_standin.kubectl("get", PAS, "-n", standin_namespace, check=False).returncode == 0,
                20, "the CRD served")
    port = free_port()
    log = (tmp_path / "controller.log").open("wb")
    env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
    proc = subprocess.Popen([sys.executable, "-m", "controller", "--kubeconfig", str(kube_standin.kubeconfig),
                             "--leader-elect=false", "--metrics-port", str(port), "--metrics-bind-address",
                             "127.0.0.1", f"--watch-namespace={standin_namespace}", "--sync-period=3s", *extra],
                            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        yield port, proc
    finally:
        terminate(proc)
        log.close()
        print((tmp_path / "controller.log").read_text()[-4000:])


@pytest.mark.integration
@pytest.mark.timeout(90)
def test_controller_runs_against_the_standin(kube_standin: StandIn, standin_namespace: str,
                                              controller: tuple[int, subprocess.Popen[bytes]]) -> None:
    port, proc = controller
    ns = standin_namespace
    kube_standin.apply(deployment("web", 2), namespace=ns)
    pas = {"apiVersion": "autoscaling.prom-autoscaler.io/v1alpha1", "kind": "PromAutoscaler",
           "metadata": {"name": "web", "namespace": ns},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "minReplicas": 1, "maxReplicas": 5,
                    "metrics": [{"type": "External", "external": {"metric": {"name": "queue_depth"},
                                 "target": {"type": "AverageValue", "averageValue": "10"}}}]}}
    kube_standin.apply(pas, namespace=ns)
    _eventually(lambda: _get(port, "/healthz")[0] == 200 or proc.poll() is not None, 30, "/healthz")
    assert proc.poll() is None, "the controller exited"
    _eventually(lambda: _get(port, "/readyz")[0] == 200, 30, "/readyz")

    def status() -> dict[str, Any] | None:
        out = kube_standin.kubectl("get", PAS, "web", "-n", ns, "-o", "json", check=False)
        return (json.loads(out.stdout).get("status") or None) if out.returncode == 0 else None

    written = _eventually(lambda: (s := status()) and s.get("conditions") and s, 30, "status written")
    active = {c["type"]: c for c in written["conditions"]}["ScalingActive"]
    assert active["status"] == "False", active
    assert written["observedGeneration"] >= 1 and written["lastDecision"]["outcome"]
    replicas = json.loads(kube_standin.kubectl("get", "deployment", "web", "-n", ns, "-o", "json").stdout)
    assert replicas["spec"]["replicas"] == 2, "never scale on data that could not be read"

    code, metrics = _get(port, "/metrics", kube_standin.admin_token)
    assert code == 200
    assert ('prom_autoscaler_controller_reconciliations_total{action="none",error="internal",'
            'kind="PromAutoscaler",result="blocked"}') in metrics
    assert 'prom_autoscaler_controller_num_autoscalers{kind="PromAutoscaler"} 1.0' in metrics
    assert "prom_autoscaler_controller_leader 1.0" in metrics

    explain = subprocess.run([sys.executable, "-m", "controller", "explain", f"{ns}/web", "--kubeconfig",
                              str(kube_standin.kubeconfig)], cwd=REPO, capture_output=True, text=True, timeout=30)
    assert explain.returncode == 0, explain.stderr
    assert "queue_depth" in explain.stdout and "Why no count" in explain.stdout
    assert "no replica count decided; the target stays at 2" in explain.stdout  # blocked: nothing decided

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(15) == 0, "SIGTERM: drain, checkpoint, exit 0"


@pytest.mark.integration
@pytest.mark.timeout(90)
def test_only_tokens_rbac_allows_read_the_metrics_port(kube_standin: StandIn, standin_namespace: str, tmp_path: Path,
                                                       controller: tuple[int, subprocess.Popen[bytes]]) -> None:
    """A scraper's service account gets 403 until a ClusterRole grants the nonResourceURLs; no token
    or a made-up one is a 401; the kubelet's probe paths need none."""
    port, proc = controller
    ns = standin_namespace
    _eventually(lambda: _get(port, "/healthz")[0] == 200 or proc.poll() is not None, 30, "/healthz")
    assert proc.poll() is None, "the controller exited"

    for token in ("", "made-up"):
        code, body = _get(port, "/metrics", token)
        assert (code, json.loads(body)["reason"]) == (401, "Unauthorized"), body
    assert _get(port, "/debug/decisions/pas/x/y")[0] == 401

    kube_standin.kubectl("create", "serviceaccount", "scraper", "-n", ns)
    token = kube_standin.kubectl("create", "token", "scraper", "-n", ns).stdout.strip()
    code, body = _get(port, "/metrics", token)
    assert code == 403, body
    assert json.loads(body)["message"] == \
        f'forbidden: User "system:serviceaccount:{ns}:scraper" cannot get path "/metrics"'

    reader = f"{ns}-metrics-reader"
    kube_standin.kubectl("create", "clusterrole", reader, "--verb=get", "--non-resource-url=/metrics",
                         "--non-resource-url=/debug/decisions/*")
    kube_standin.kubectl("create", "clusterrolebinding", reader, f"--clusterrole={reader}",
                         f"--serviceaccount={ns}:scraper")
    # denials are cached for 10 s, as k8s.io/apiserver's delegated authorization does
    _eventually(lambda: _get(port, "/metrics", token)[0] == 200, 30, "/metrics readable once RBAC allows it")
    assert "prom_autoscaler_controller_leader" in _get(port, "/metrics", token)[1]
    assert _get(port, f"/debug/decisions/pas/{ns}/none", token)[0] == 404, "past the guard: no such decision"
    assert _get(port, "/healthz", "made-up")[0] == 200, "always-allowed paths ignore credentials"

    def explain(*credentials: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "controller", "explain", "--hpa", f"{ns}/none",
                               f"--controller-url=https://127.0.0.1:{port}", "--insecure-skip-tls-verify", *credentials],
                              cwd=REPO, capture_output=True, text=True, timeout=30)

    refused = explain("--token=made-up")
    assert refused.returncode == 1 and "HTTP 401" in refused.stderr and "--token" in refused.stderr, refused.stderr
    # the kubeconfig user's own token gets past the guard: the answer is the decision's 404
    kubeconfig = kube_standin.service_account_kubeconfig(tmp_path / "scraper.kubeconfig", ns, "scraper")
    allowed = explain(f"--kubeconfig={kubeconfig}")
    assert allowed.returncode == 1 and "HTTP 404" in allowed.stderr and "no decision recorded" in allowed.stderr, \
        allowed.stderr


def _verified_status(port: int, ca_pem: bytes) -> int:
    """/healthz's status over a connection that verifies the serving certificate against `ca_pem`
    (0 when the handshake fails)."""
    context = client_ssl_context(ca_pem=ca_pem)
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", timeout=2, context=context) as resp:
            return int(resp.status)
    except OSError:
        return 0


@pytest.mark.integration
@pytest.mark.timeout(90)
@pytest.mark.parametrize("controller", [("--tls-cert-file={tmp}/tls/tls.crt", "--tls-private-key-file={tmp}/tls/tls.key")],
                         indirect=True, ids=["given-certificate"])
def test_a_given_serving_certificate_is_served_and_reloaded(serving_ca: bytes, tmp_path: Path,
                                                           controller: tuple[int, subprocess.Popen[bytes]]) -> None:
    """What cert-manager (the chart's controller.tls.existingSecret) relies on: the files given are
    what clients verify, and a renewed pair is served without a restart."""
    port, proc = controller
    _eventually(lambda: _verified_status(port, serving_ca) == 200 or proc.poll() is not None, 30,
                "/healthz verified against the given certificate's CA")
    assert proc.poll() is None, "the controller exited"
    renewed = _write_serving_cert(tmp_path / "tls", "second-ca")
    _eventually(lambda: _verified_status(port, renewed) == 200, 30, "the renewed certificate served")
    assert _verified_status(port, serving_ca) == 0, "the first CA no longer verifies the served certificate"
