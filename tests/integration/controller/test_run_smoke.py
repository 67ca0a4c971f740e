"""`python -m controller` against the real API-server stand-in: probes, /metrics, status written.

The stand-in serves the PromAutoscaler CRD from the chart (applied with kubectl) and a Deployment
with its /scale. No metrics APIs are registered, so the object's External metric cannot be read:
the controller must say so in status (ScalingActive=False) and leave the Deployment alone, while
/healthz, /readyz and /metrics answer.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.standin import StandIn
from tests.integration.standin.manifests import deployment
from tests.paths import REPO

CRD = REPO / "charts" / "prom-autoscaler" / "crds" / "promautoscalers.yaml"
PAS = "promautoscalers.autoscaling.prom-autoscaler.io"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _eventually(check: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()
    except OSError:
        return 0, ""


@pytest.fixture
def controller(kube_standin: StandIn, standin_namespace: str, tmp_path: Path) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    kube_standin.kubectl("apply", "-f", str(CRD))
    _eventually(lambda: kube_standin.kubectl("get", PAS, "-n", standin_namespace, check=False).returncode == 0,
                20, "the CRD served")
    port = _free_port()
    log = (tmp_path / "controller.log").open("wb")
    env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
    proc = subprocess.Popen([sys.executable, "-m", "controller", "--kubeconfig", str(kube_standin.kubeconfig),
                             "--leader-elect=false", "--metrics-port", str(port), "--metrics-bind-address",
                             "127.0.0.1", f"--watch-namespace={standin_namespace}", "--sync-period=3s"],
                            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        yield port, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
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

    code, metrics = _get(port, "/metrics")
    assert code == 200
    assert 'prom_autoscaler_controller_reconciliations_total{kind="PromAutoscaler",result="blocked"}' in metrics
    assert 'prom_autoscaler_controller_num_autoscalers{kind="PromAutoscaler"} 1.0' in metrics
    assert "prom_autoscaler_controller_leader 1.0" in metrics

    explain = subprocess.run([sys.executable, "-m", "controller", "explain", f"{ns}/web", "--kubeconfig",
                              str(kube_standin.kubeconfig)], cwd=REPO, capture_output=True, text=True, timeout=30)
    assert explain.returncode == 0, explain.stderr
    assert "queue_depth" in explain.stdout and "Why 2" in explain.stdout

    proc.send_signal(signal.SIGTERM)
    assert proc.wait(15) == 0, "SIGTERM: drain, checkpoint, exit 0"
