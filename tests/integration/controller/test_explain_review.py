"""`explain` and native-HPA preview on the end-to-end stack, as a platform engineer moving an HPA
over meets them: each way explain can fail says why and what to do (exit 1), and a previewed HPA
whose built-in controller rescales under its behavior policy is explained with the numbers the
controller decided, next to the HPA's own count, while nothing is ever written.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from hack.stack.controller_stack import (REPO, ControllerProcess, ControllerStack, deployment, external_metric,
                                         promautoscaler, wait_until)
from kubecommon.kubetime import format_time

from .conftest import FAST_FLAGS
from .helpers import controller_events, writes

pytestmark = pytest.mark.integration
SYNC = 3.0
TARGET = {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}
UP_ONE_POD_PER_10_MIN = {"scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                                     "policies": [{"type": "Pods", "value": 1, "periodSeconds": 600}]}}


def _hpa(ns: str, behavior: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"scaleTargetRef": TARGET, "minReplicas": 1, "maxReplicas": 10,
                            "metrics": [external_metric("orders", "10")]}
    if behavior:
        spec["behavior"] = behavior
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": ns}, "spec": spec}


def _explain(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "controller", "explain", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=30)


def _hpa_explain(stack: ControllerStack, ctl: ControllerProcess, ns: str, *more: str) -> subprocess.CompletedProcess[str]:
    return _explain("--hpa", f"{ns}/web", f"--controller-url={ctl.url}", f"--token={stack.token}",
                    "--insecure-skip-tls-verify", *more)


def _user_kubeconfig(stack: ControllerStack, ns: str, workdir: Path) -> Path:
    """A kubeconfig for a fresh service account that RBAC grants nothing."""
    stack.kubectl("-n", ns, "create", "serviceaccount", "nobody")
    token = stack.kubectl("-n", ns, "create", "token", "nobody").stdout.strip()
    config = yaml.safe_load(stack.standin.kubeconfig.read_text())
    context = next(c for c in config["contexts"] if c["name"] == config.get("current-context", "standin"))
    config["users"] = [{"name": "nobody", "user": {"token": token}}]
    context["context"]["user"] = "nobody"
    path = workdir / f"{ns}-nobody.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.timeout(60)
def test_explain_says_why_it_has_nothing_to_print(controller_stack: ControllerStack, ns: str,
                                                  tmp_path: Path) -> None:
    admin = str(controller_stack.standin.kubeconfig)
    missing = _explain(f"{ns}/nope", f"--kubeconfig={admin}")
    assert missing.returncode == 1 and missing.stdout == ""
    assert f"PromAutoscaler {ns}/nope not found" in missing.stderr, missing.stderr
    assert f"kubectl get pas -n {ns}" in missing.stderr and "--hpa" in missing.stderr, missing.stderr
    controller_stack.apply(promautoscaler(ns, "web", target=TARGET, metrics=[external_metric("orders", "10")]))
    unsynced = _explain(f"{ns}/web", f"--kubeconfig={admin}")
    assert unsynced.returncode == 1 and "has no status.lastDecision yet" in unsynced.stderr, unsynced.stderr
    forbidden = _explain(f"{ns}/web", f"--kubeconfig={_user_kubeconfig(controller_stack, ns, tmp_path)}")
    assert forbidden.returncode == 1 and "403" in forbidden.stderr, forbidden.stderr
    assert f"kubectl auth can-i get promautoscalers -n {ns}" in forbidden.stderr, forbidden.stderr


@pytest.mark.timeout(90)
def test_explain_hpa_says_why_the_controller_has_no_decision(controller_stack: ControllerStack, ns: str) -> None:
    controller_stack.set_queue(ns, "orders", 35)
    controller_stack.apply(deployment(ns, "web", replicas=1), _hpa(ns))
    ctl = controller_stack.controller(ns, *FAST_FLAGS)  # without --preview-native-hpas
    time.sleep(SYNC)
    unpreviewed = _hpa_explain(controller_stack, ctl, ns)
    assert unpreviewed.returncode == 1 and "HTTP 404" in unpreviewed.stderr, unpreviewed.stderr
    assert "--preview-native-hpas" in unpreviewed.stderr and "--watch-namespace" in unpreviewed.stderr, \
        unpreviewed.stderr
    unverified = _explain("--hpa", f"{ns}/web", f"--controller-url={ctl.url}", f"--token={controller_stack.token}")
    assert unverified.returncode == 1 and "certificate was not accepted" in unverified.stderr, unverified.stderr
    assert "--insecure-skip-tls-verify" in unverified.stderr, unverified.stderr
    assert writes(ctl) == []


@pytest.mark.timeout(120)
def test_a_previewed_hpa_is_explained_with_the_controllers_numbers_next_to_its_own(
        controller_stack: ControllerStack, ns: str) -> None:
    controller_stack.set_queue(ns, "orders", 35)  # 35 against 10 a pod: 4 wanted, +1 a 10 min allowed
    controller_stack.apply(deployment(ns, "web", replicas=1), _hpa(ns, UP_ONE_POD_PER_10_MIN))
    controller_stack.wait_external(ns, "orders", 35)
    ctl = controller_stack.controller(ns, *FAST_FLAGS, "--preview-native-hpas")
    gauge = "prom_autoscaler_controller_desired_replicas"
    wait_until(lambda: ctl.metric(gauge, namespace=ns, kind="HorizontalPodAutoscaler") == 2, timeout=5 * SYNC,
               interval=0.5, what="the preview's +1 (policy: 1 pod per 10 min)")
    # the built-in controller takes that step: the Deployment at 2, the HPA's status says so
    controller_stack.kubectl("-n", ns, "scale", "deployment/web", "--replicas=2")
    status = {"status": {"currentReplicas": 2, "desiredReplicas": 2, "lastScaleTime": format_time(time.time())}}
    controller_stack.kubectl("-n", ns, "patch", "hpa", "web", "--subresource=status", "--type=merge",
                             "-p", json.dumps(status))
    time.sleep(3 * SYNC)
    assert ctl.metric(gauge, namespace=ns, kind="HorizontalPodAutoscaler") == 2, \
        "the HPA's own +1 spent the policy's budget: the preview agrees with it instead of proposing 3"
    text = _hpa_explain(controller_stack, ctl, ns)
    as_json = _hpa_explain(controller_stack, ctl, ns, "-o", "json")
    assert text.returncode == 0 and as_json.returncode == 0, text.stderr + as_json.stderr
    doc = json.loads(as_json.stdout)
    last = doc["lastDecision"]
    assert (last["currentReplicas"], last["desiredReplicas"], doc["hpaDesiredReplicas"]) == (2, 2, 2), last
    assert "Outcome: no change: 2 -> 2 replicas" in text.stdout, text.stdout
    assert "HorizontalPodAutoscaler's own status.desiredReplicas: 2 (agrees)" in text.stdout, text.stdout
    assert "ScaleUpLimit" in text.stdout, text.stdout
    assert writes(ctl) == [], "preview of native HPAs wrote to the cluster"
    assert controller_events(controller_stack, ns) == []
    assert controller_stack.replicas(ns, "web") == 2


@pytest.mark.timeout(90)
def test_a_previewed_hpa_whose_metric_cannot_be_read_claims_no_count(controller_stack: ControllerStack,
                                                                     ns: str) -> None:
    hpa = _hpa(ns)
    hpa["spec"]["metrics"] = [external_metric("no-such-queue", "10")]
    controller_stack.apply(deployment(ns, "web", replicas=1), hpa)
    status = {"status": {"currentReplicas": 1, "desiredReplicas": 1}}
    controller_stack.kubectl("-n", ns, "patch", "hpa", "web", "--subresource=status", "--type=merge",
                             "-p", json.dumps(status))
    ctl = controller_stack.controller(ns, *FAST_FLAGS, "--preview-native-hpas")
    wait_until(lambda: _hpa_explain(controller_stack, ctl, ns).returncode == 0, timeout=5 * SYNC, interval=0.5,
               what="a decision document for the HPA")
    time.sleep(SYNC)
    assert ctl.metric("prom_autoscaler_controller_native_hpa_desired_replicas", namespace=ns) == 1
    ours = [labels for (name, labels) in ctl.metrics()
            if name == "prom_autoscaler_controller_desired_replicas" and ("namespace", ns) in labels]
    assert ours == [], "a count was published for a decision that could not be made"
    text = _hpa_explain(controller_stack, ctl, ns).stdout
    assert "no replica count decided; the target stays at 1" in text, text
    assert "no-such-queue" in text and "Error: " in text, text
    assert "(we decided no count to compare)" in text, text
    assert writes(ctl) == [] and controller_events(controller_stack, ns) == []


@pytest.mark.timeout(90)
def test_explain_hpa_on_a_standby_replica_says_to_ask_the_leader(controller_stack: ControllerStack,
                                                                 ns: str) -> None:
    """`kubectl port-forward svc/...` reaches either of the chart's two replicas; a standby decides nothing."""
    controller_stack.set_queue(ns, "orders", 35)
    controller_stack.apply(deployment(ns, "web", replicas=1), _hpa(ns))
    controller_stack.wait_external(ns, "orders", 35)
    first = controller_stack.controller(ns, *FAST_FLAGS, "--preview-native-hpas", name="a")
    wait_until(lambda: _hpa_explain(controller_stack, first, ns).returncode == 0, timeout=5 * SYNC, interval=0.5,
               what="the leader's decision document")
    standby = controller_stack.controller(ns, *FAST_FLAGS, "--preview-native-hpas", name="b")
    assert standby.metric("prom_autoscaler_controller_leader") == 0
    asked = _hpa_explain(controller_stack, standby, ns)
    assert asked.returncode == 1 and "HTTP 404" in asked.stderr, asked.stderr
    assert "only the leading replica decides" in asked.stderr, asked.stderr
    assert "kubectl get lease -n NAMESPACE prom-autoscaler-controller" in asked.stderr, asked.stderr
    assert writes(first) == [] and writes(standby) == []
