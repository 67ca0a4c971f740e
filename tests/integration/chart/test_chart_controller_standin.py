"""Both components installed with the real `helm install` into the API-server stand-in, each run
from what was installed, on nothing but the chart's RBAC.

The adapter runs as in test_chart_standin (the installed Deployment's args, the chart's
ServiceAccount). The controller runs `python -m controller` with the installed controller
Deployment's args and a kubeconfig holding a token of the chart's controller ServiceAccount
(TokenRequest, what `kubectl create token` does), so every call it makes is authorized by the
chart's ClusterRole and leader-election Role alone. A PromAutoscaler on an External metric served
by the adapter must make it scale a Deployment (the stand-in's simulator keeps pods in step).
Taking one rule away (the /scale rule, the metrics-API read, the Lease Role) must stop it from
scaling. With controller.previewNativeHpas it decides for a native HPA and writes nothing.
Then: the `helm test` hook's checks pass with the hook's own RBAC, the metric names the
PrometheusRule alerts on are ones the running binaries expose, and `helm upgrade` keeps the CRD,
the PromAutoscalers and the certificates.

The stand-in has no policy/v1: the PodDisruptionBudgets are left out (test_chart_controller
checks them).
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from hack.stack.controller_stack import wait_until
from hack.stack.processes import free_port
from hack.stack.processes import log_tail, spawn_logged, terminate
from kubecommon.tls import client_ssl_context
from tests.fixtures.adapter import RunningAdapter
from tests.fixtures.prometheus import LocalPrometheus
from tests.fixtures.standin import StandIn, start_standin
from tests.integration.chart.conftest import CHART, FULLNAME, NAMESPACE, RELEASE, REPO, Helm
from tests.integration.chart.test_chart_standin import (DEMO, _get, _helm_install, _local_args, _write_pod_files,
                                                       local_path)

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

CONTROLLER = f"{FULLNAME}-controller"
GROUP, VERSION = "autoscaling.prom-autoscaler.io", "v1alpha1"
CRD = f"promautoscalers.{GROUP}"
# The demo exporter serves queue_messages_ready{namespace="shop",queue="orders"} = 42: with an
# AverageValue target of 10 the HPA algorithm wants ceil(42 / 10) = 5 replicas.
WORKLOAD_NS, QUEUE, TARGET, WANTED = "shop", "orders", "10", 5
SCRAPER = "prometheus"  # reads the controller's /metrics and /debug with its own token, as Prometheus would
_UNVERIFIED = client_ssl_context(insecure=True)  # the controller's self-signed serving certificate


@dataclass(frozen=True, slots=True, kw_only=True)
class Installed:
    cluster: StandIn
    adapter: RunningAdapter
    helm: Helm
    values_file: Path
    workdir: Path


@pytest.fixture(scope="module")
def installed(helm: Helm, prometheus: LocalPrometheus, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    values_file = helm.values_file({
        "prometheus": {"url": prometheus.url, "port": None},
        "metricsRelistInterval": "2s",
        "rules": {"default": False, "custom": DEMO["rules"], "external": DEMO["externalRules"],
                  "resource": DEMO["resourceRules"]},
        "podDisruptionBudget": {"enabled": False},
        "controller": {"podDisruptionBudget": {"enabled": False},
                       "leaderElection": {"leaseDuration": "4s", "renewDeadline": "3s", "retryPeriod": "1s"},
                       # Prometheus' account: the chart binds it to the controller's metrics-reader role
                       "metricsReaders": [{"kind": "ServiceAccount", "name": SCRAPER, "namespace": NAMESPACE}]},
    })
    workdir = tmp_path_factory.mktemp("chart-controller")
    with start_standin(workdir / "standin", "--simulate-workloads", "--ready-delay", "0.2",
                       "--availability-interval", "0.5") as cluster:
        cluster.ensure_namespace(NAMESPACE)
        _helm_install(helm, cluster, "install", values_file)
        kubeconfig = cluster.service_account_kubeconfig(workdir / "adapter.kubeconfig", NAMESPACE, FULLNAME)
        _write_pod_files(cluster, workdir)
        port = free_port()
        adapter = RunningAdapter(workdir=workdir, port=port,
                                 args=_local_args(_get(cluster, "deployment", FULLNAME), workdir, port, kubeconfig))
        try:
            adapter.start(timeout=60)
            cluster.register_service(NAMESPACE, FULLNAME, "127.0.0.1", port, service_port=443, port_name="https")
            cluster.wait_apiservice_available("v1beta1.external.metrics.k8s.io", timeout=30)
            yield Installed(cluster=cluster, adapter=adapter, helm=helm, values_file=values_file, workdir=workdir)
        finally:
            adapter.stop()


class Controller:
    """`python -m controller` with the installed Deployment's command line, as the chart's
    ServiceAccount; /metrics on a local port."""

    def __init__(self, installed: Installed, name: str) -> None:
        self.port = free_port()
        self.log = installed.workdir / f"{name}.log"
        kubeconfig = installed.cluster.service_account_kubeconfig(installed.workdir / f"{name}.kubeconfig",
                                                                  NAMESPACE, CONTROLLER)
        container = _get(installed.cluster, "deployment", CONTROLLER)["spec"]["template"]["spec"]["containers"][0]
        assert container["command"][0] == "prom-autoscaler-controller"
        args = [re.sub(r"^--metrics-port=.*", f"--metrics-port={self.port}", a) for a in container["args"]]
        args = [f"{name}{sep}{local_path(value, installed.workdir)}"
                for name, sep, value in (a.partition("=") for a in args)]
        self.argv = [sys.executable, "-m", "controller", *container["command"][1:], *args,
                     f"--kubeconfig={kubeconfig}", "--metrics-bind-address=127.0.0.1"]
        scraper = installed.cluster.service_account_kubeconfig(installed.workdir / f"{name}-scraper.kubeconfig",
                                                               NAMESPACE, SCRAPER)
        self.token = str(yaml.safe_load(scraper.read_text())["users"][0]["user"]["token"])
        self.env = {**os.environ, "POD_NAMESPACE": NAMESPACE, "POD_NAME": name, "PYTHONUNBUFFERED": "1"}
        self.env.pop("KUBERNETES_SERVICE_HOST", None)
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Controller:
        self.proc = spawn_logged(self.argv, self.log, cwd=REPO, env=self.env)
        wait_until(lambda: self.get("/healthz") is not None or self.proc is None or self.proc.poll() is not None,
              timeout=30, what="controller /healthz")
        assert self.proc.poll() is None, f"controller exited:\n{log_tail(self.log)}"
        return self

    def __exit__(self, *_: object) -> None:
        terminate(self.proc, timeout=15)

    def get(self, path: str) -> str | None:
        """GET over HTTPS as the scraper account (what the chart's metrics-reader role allows)."""
        request = urllib.request.Request(f"https://127.0.0.1:{self.port}{path}",
                                         headers={"Authorization": f"Bearer {self.token}"})
        try:
            with urllib.request.urlopen(request, timeout=2, context=_UNVERIFIED) as resp:
                return str(resp.read().decode())
        except OSError:
            return None

    def metric(self, metric: str, **labels: str) -> float:
        """Sum of the samples of `metric` carrying `labels` (0 when absent)."""
        total = 0.0
        for line in (self.get("/metrics") or "").splitlines():
            match = re.match(r"^([a-zA-Z_:][\w:]*)(\{.*\})? (\S+)$", line)
            if match and match.group(1) == metric and all(f'{k}="{v}"' in (match.group(2) or "")
                                                        for k, v in labels.items()):
                total += float(match.group(3))
        return total


def _workload(installed: Installed, name: str) -> None:
    """A one-replica Deployment and a PromAutoscaler wanting WANTED replicas for it."""
    labels = {"app": name}
    installed.cluster.ensure_namespace(WORKLOAD_NS)
    installed.cluster.apply(
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": WORKLOAD_NS},
         "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                  "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "app", "image": "a"}]}}}},
        {"apiVersion": f"{GROUP}/{VERSION}", "kind": "PromAutoscaler",
         "metadata": {"name": name, "namespace": WORKLOAD_NS},
         "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                  "minReplicas": 1, "maxReplicas": 10, "syncPeriodSeconds": 3,
                  "metrics": [{"type": "External", "external": {
                      "metric": {"name": "queue_messages_ready", "selector": {"matchLabels": {"queue": QUEUE}}},
                      "target": {"type": "AverageValue", "averageValue": TARGET}}}]}})


def _replicas(installed: Installed, name: str) -> int:
    return int(_get(installed.cluster, "deployment", name, WORKLOAD_NS)["spec"]["replicas"])


def test_controller_scales_with_nothing_but_the_chart_rbac(installed: Installed) -> None:
    _workload(installed, "web")
    with Controller(installed, "ctl-full") as controller:
        try:
            wait_until(lambda: _replicas(installed, "web") == WANTED, timeout=60, what=f"web scaled to {WANTED}")
            status = wait_until(lambda: (_get(installed.cluster, "promautoscaler", "web", WORKLOAD_NS).get("status") or {})
                           .get("desiredReplicas") == WANTED, timeout=30, what="status.desiredReplicas written")
        except TimeoutError as err:
            raise AssertionError(f"{err}\n{log_tail(controller.log)}") from None
        assert status
        # Every call it made was allowed: nothing it reads or writes is missing from the chart's RBAC.
        assert "403 Forbidden" not in controller.log.read_text()
        lease = _get(installed.cluster, "lease", CONTROLLER)
        assert lease["spec"]["holderIdentity"], lease
        assert controller.metric("prom_autoscaler_controller_leader") == 1


def _without_scale_rule(role: dict[str, Any]) -> dict[str, Any]:
    role["rules"] = [r for r in role["rules"] if not any(x.endswith("/scale") for x in r["resources"])]
    return role


def _scale_denied(c: Controller) -> bool:
    """A read of /scale refused, or (once the watch cache answers reads) a write refused."""
    return bool(c.metric("prom_autoscaler_controller_reconciliations_total", result="failed_get_scale")
                or c.metric("prom_autoscaler_controller_scale_writes_total", result="error"))


def _without_metrics_read(role: dict[str, Any]) -> dict[str, Any]:
    role["rules"] = [r for r in role["rules"] if "external.metrics.k8s.io" not in r.get("apiGroups", [])]
    return role


# (what is taken away, how, the sign that the controller tried and failed)
MISSING_RULES = [
    pytest.param("clusterrole", _without_scale_rule, _scale_denied, id="no /scale rule"),
    pytest.param("clusterrole", _without_metrics_read,
                 lambda c: c.metric("prom_autoscaler_controller_reconciliations_total", result="blocked"),
                 id="no read on the metrics APIs"),
    pytest.param("rolebinding", None, lambda c: time.sleep(6) or True, id="no Lease Role"),
]


@pytest.mark.parametrize(("kind", "cut", "tried"), MISSING_RULES)
def test_one_missing_permission_stops_scaling(installed: Installed, kind: str,
                                              cut: Callable[[dict[str, Any]], dict[str, Any]] | None,
                                              tried: Callable[[Controller], Any]) -> None:
    name = f"{kind}-{int(time.monotonic() * 1000) % 100000}"
    cluster = installed.cluster
    if kind == "clusterrole":
        original = _get(cluster, "clusterrole", CONTROLLER, namespace="")
        cluster.apply(cut(copy.deepcopy(original)))
    else:
        original = _get(cluster, "rolebinding", f"{CONTROLLER}-leader-election")
        cluster.kubectl("delete", "rolebinding", f"{CONTROLLER}-leader-election", "-n", NAMESPACE)
    try:
        _workload(installed, name)
        with Controller(installed, f"ctl-{name}") as controller:
            wait_until(lambda: tried(controller), timeout=30, what="the controller tried")
            time.sleep(3)  # one more sync period
            assert _replicas(installed, name) == 1, log_tail(controller.log)
            assert controller.metric("prom_autoscaler_controller_scale_writes_total", result="success") == 0
    finally:
        for field in ("resourceVersion", "uid", "creationTimestamp", "managedFields"):
            original["metadata"].pop(field, None)
        cluster.apply(original)


def test_without_list_watch_on_the_target_kind_scales_reads_fall_back_to_get(installed: Installed) -> None:
    """An older ClusterRole (only get/update on /scale): scales are read with GET /scale per sync."""
    cluster = installed.cluster
    original = _get(cluster, "clusterrole", CONTROLLER, namespace="")
    role = copy.deepcopy(original)
    role["rules"] = [r for r in role["rules"]
                     if not ("apps" in r.get("apiGroups", []) and r["verbs"] == ["list", "watch"])]
    cluster.apply(role)
    try:
        _workload(installed, "legacy")
        with Controller(installed, "ctl-legacy") as controller:
            wait_until(lambda: _replicas(installed, "legacy") == WANTED, timeout=60, what=f"legacy scaled to {WANTED}")
            log = controller.log.read_text()
            assert log.count("reading its scale with GET /scale per sync instead") == 1, log_tail(controller.log)
    finally:
        for field in ("resourceVersion", "uid", "creationTimestamp", "managedFields"):
            original["metadata"].pop(field, None)
        cluster.apply(original)


def test_helm_test_checks_pass_with_the_hooks_own_rbac(installed: Installed) -> None:
    """What `helm test` runs, run here with local kubectl: the hook Pod's containers cannot run in
    the stand-in (no kubelet), so their commands run as the hook's ServiceAccount."""
    cluster = installed.cluster
    hooks = installed.helm.run("get", "hooks", RELEASE, "--namespace", NAMESPACE,
                               "--kubeconfig", str(cluster.kubeconfig))
    assert hooks.returncode == 0, hooks.output
    objects = [o for o in yaml.safe_load_all(hooks.stdout) if o]
    [pod] = [o for o in objects if o["kind"] == "Pod"]
    cluster.apply(*[o for o in objects if o["kind"] != "Pod"])
    sa = pod["spec"]["serviceAccountName"]
    kubeconfig = cluster.service_account_kubeconfig(installed.workdir / "helm-test.kubeconfig", NAMESPACE, sa)
    for container in pod["spec"]["containers"]:
        result = cluster.kubectl(*container["args"], kubeconfig=kubeconfig, check=False)
        assert result.returncode == 0, (container["name"], result.stderr)
    assert cluster.kubectl("auth", "can-i", "list", "pods", "-A", kubeconfig=kubeconfig,
                           check=False).stdout.strip() == "no"


def _alert_metrics(installed: Installed) -> set[str]:
    rendered = installed.helm.run("template", RELEASE, str(CHART), "--namespace", NAMESPACE, "-f",
                                  str(installed.values_file), "--set", "prometheusRule.enabled=true",
                                  "--show-only", "templates/prometheusrule.yaml")
    assert rendered.returncode == 0, rendered.output
    text = json.dumps(yaml.safe_load(rendered.stdout)["spec"])
    return {re.sub(r"_(bucket|count|sum)$", "", n) for n in re.findall(r"prom_autoscaler_\w+", text)}


def test_alerts_use_metric_names_the_binaries_expose(installed: Installed) -> None:
    admin = installed.cluster.admin_token
    adapter_text = installed.adapter.request("/metrics", token=admin, verify=False).text
    with Controller(installed, "ctl-metrics") as controller:
        wait_until(lambda: controller.metric("prom_autoscaler_controller_leader") == 1, timeout=30, what="leading")
        controller_text = controller.get("/metrics") or ""
    exposed = {re.sub(r"_(bucket|count|sum|total|created)$", "", line.split()[2])
               for line in (adapter_text + controller_text).splitlines() if line.startswith("# TYPE ")}
    wanted = {re.sub(r"_total$", "", n) for n in _alert_metrics(installed)}
    assert wanted and wanted <= exposed, sorted(wanted - exposed)


def test_preview_decides_native_hpas_and_writes_nothing(installed: Installed) -> None:
    """With controller.previewNativeHpas (helm upgrade), the installed args and RBAC let the
    controller decide for a native HPA, published on /metrics, while the target keeps its replicas."""
    cluster = installed.cluster
    values = yaml.safe_load(installed.values_file.read_text())
    preview = installed.helm.values_file({**values, "controller": {**values["controller"], "previewNativeHpas": True}})
    _helm_install(installed.helm, cluster, "upgrade", preview)
    cluster.ensure_namespace(WORKLOAD_NS)
    labels = {"app": "native"}
    cluster.apply(
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "native", "namespace": WORKLOAD_NS},
         "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                  "template": {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "app", "image": "a"}]}}}},
        {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
         "metadata": {"name": "native", "namespace": WORKLOAD_NS},
         "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "native"},
                  "minReplicas": 1, "maxReplicas": 10,
                  "metrics": [{"type": "External", "external": {
                      "metric": {"name": "queue_messages_ready", "selector": {"matchLabels": {"queue": QUEUE}}},
                      "target": {"type": "AverageValue", "averageValue": TARGET}}}]}})
    with Controller(installed, "ctl-preview") as controller:
        assert "--preview-native-hpas" in controller.argv
        try:
            # 4, not 5: the target never leaves 1 replica, so upstream's first-step limit
            # max(2 × current, 4) caps every preview decision.
            wait_until(lambda: controller.metric("prom_autoscaler_controller_desired_replicas", namespace=WORKLOAD_NS,
                                            name="native") == 4, timeout=60, what="preview decision published")
        except TimeoutError as err:
            debug = controller.get(f"/debug/decisions/HorizontalPodAutoscaler/{WORKLOAD_NS}/native")
            raise AssertionError(f"{err}\n{debug}\n{controller.get('/metrics')}\n{log_tail(controller.log)}") from None
        time.sleep(1)
        assert _replicas(installed, "native") == 1
        assert "403 Forbidden" not in controller.log.read_text()


def test_upgrade_keeps_the_crd_the_objects_and_the_certificates(installed: Installed) -> None:
    cluster = installed.cluster
    crd_before = _get(cluster, "crd", CRD, namespace="")
    tls_before = _get(cluster, "secret", f"{FULLNAME}-tls")["data"]
    _workload(installed, "kept")
    _helm_install(installed.helm, cluster, "upgrade", installed.values_file)
    crd_after = _get(cluster, "crd", CRD, namespace="")
    assert crd_after["metadata"]["uid"] == crd_before["metadata"]["uid"]
    assert _get(cluster, "promautoscaler", "kept", WORKLOAD_NS)["spec"]["maxReplicas"] == 10
    assert _get(cluster, "secret", f"{FULLNAME}-tls")["data"] == tls_before
    api = cluster.wait_apiservice_available("v1beta1.custom.metrics.k8s.io", timeout=30)
    assert api["spec"]["caBundle"] == tls_before["ca.crt"]
