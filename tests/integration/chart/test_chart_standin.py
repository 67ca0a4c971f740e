"""The chart installed with the real `helm install` into the API-server stand-in, the adapter run
from what was installed.

The adapter is started with the installed Deployment's args (paths mapped to local copies of the
installed ConfigMap and TLS Secret) as the chart's ServiceAccount, so it works only if the chart's
RBAC (auth-delegator, the kube-system auth reader, the resource reader) is enough; the stand-in's
aggregator reaches it through the chart's APIServices, verifying the serving certificate against
their caBundle for `<svc>.<ns>.svc`. Then the NOTES' check, `kubectl get --raw
/apis/custom.metrics.k8s.io/v1beta1`, must list the metrics, and `helm upgrade` must keep the CA.

helm runs with --disable-openapi-validation (the stand-in serves no OpenAPI document) and into a
namespace created beforehand. The stand-in has no policy/v1, so the PodDisruptionBudgets are left out
(checked in test_chart_deployment and test_chart_controller).
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from hack.stack.processes import free_port
from tests.fixtures.adapter import RunningAdapter
from tests.fixtures.prometheus import LocalPrometheus
from tests.fixtures.standin import StandIn, start_standin
from tests.integration.chart.conftest import CHART, FULLNAME, NAMESPACE, RELEASE, REPO, Helm

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

DEMO = yaml.safe_load((REPO / "hack" / "demo" / "config.yaml").read_text())
APISERVICES = ("v1beta1.custom.metrics.k8s.io", "v1beta2.custom.metrics.k8s.io",
               "v1beta1.external.metrics.k8s.io", "v1beta1.metrics.k8s.io")
# Chart paths in the pod -> directories of the local run.
# Where the chart mounts files in the pods -> where the test writes what the kubelet would mount
# (the controller reads the adapter's rules ConfigMap for its history reader).
POD_PATHS = {"/etc/adapter": "config", "/etc/prom-autoscaler/rules": "config", "/var/run/tls": "tls",
             "/var/run/serving-cert": "serving-cert"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Installed:
    cluster: StandIn
    adapter: RunningAdapter
    helm: Helm
    values_file: Path
    notes: str


def local_path(value: str, workdir: Path) -> str:
    """A path the chart mounts in a pod, as the test's copy under `workdir`; any other value as given."""
    for pod_dir, local in POD_PATHS.items():
        if value.startswith(pod_dir + "/") or value == pod_dir:
            return str(workdir / local) + value[len(pod_dir):]
    return value


def _local_args(deployment: dict[str, Any], workdir: Path, port: int, kubeconfig: Path) -> list[str]:
    args = []
    for arg in deployment["spec"]["template"]["spec"]["containers"][0]["args"]:
        name, sep, value = arg.partition("=")
        value = local_path(value, workdir)
        if name == "--secure-port":
            value = str(port)
        args.append(f"{name}={value}" if sep else name)
    return [*args, "--bind-address=127.0.0.1", f"--kubeconfig={kubeconfig}"]


def _get(cluster: StandIn, kind: str, name: str, namespace: str = NAMESPACE) -> dict[str, Any]:
    scope = ["-n", namespace] if namespace else []
    return json.loads(cluster.kubectl("get", kind, name, *scope, "-o", "json").stdout)


def _write_pod_files(cluster: StandIn, workdir: Path) -> None:
    """What the kubelet would mount: the installed ConfigMap and TLS Secret."""
    (workdir / "config").mkdir(parents=True)
    config = _get(cluster, "configmap", FULLNAME)["data"]["config.yaml"]
    (workdir / "config" / "config.yaml").write_text(config)
    (workdir / "tls").mkdir()
    for key, value in _get(cluster, "secret", f"{FULLNAME}-tls")["data"].items():
        (workdir / "tls" / key).write_bytes(base64.b64decode(value))


def _helm_install(helm: Helm, cluster: StandIn, verb: str, values_file: Path) -> str:
    # The stand-in serves no OpenAPI document for helm to validate manifests against.
    result = helm.run(verb, RELEASE, str(CHART), "--namespace", NAMESPACE, "-f", str(values_file),
                      "--kubeconfig", str(cluster.kubeconfig), "--disable-openapi-validation", timeout=60)
    assert result.returncode == 0, result.output
    return result.stdout


@pytest.fixture(scope="module")
def installed(helm: Helm, prometheus: LocalPrometheus, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    values_file = helm.values_file({
        "prometheus": {"url": prometheus.url, "port": None},
        "metricsRelistInterval": "2s",
        "rules": {"default": False, "custom": DEMO["rules"], "external": DEMO["externalRules"],
                  "resource": DEMO["resourceRules"]},
        "apiService": {"resourceMetrics": {"enabled": True}},
        "podDisruptionBudget": {"enabled": False},
        "controller": {"podDisruptionBudget": {"enabled": False}},
    })
    workdir = tmp_path_factory.mktemp("chart-install")
    with start_standin(workdir / "standin", "--availability-interval", "0.5") as cluster:
        cluster.ensure_namespace(NAMESPACE)
        notes = _helm_install(helm, cluster, "install", values_file)
        kubeconfig = cluster.service_account_kubeconfig(workdir / "adapter.kubeconfig", NAMESPACE, FULLNAME)
        _write_pod_files(cluster, workdir)
        port = free_port()
        adapter = RunningAdapter(workdir=workdir, port=port,
                                 args=_local_args(_get(cluster, "deployment", FULLNAME), workdir, port, kubeconfig))
        try:
            adapter.start(timeout=60)
            # The chart's Service selects pods; here the "pod" is the local process.
            cluster.register_service(NAMESPACE, FULLNAME, "127.0.0.1", port, service_port=443, port_name="https")
            yield Installed(cluster=cluster, adapter=adapter, helm=helm, values_file=values_file, notes=notes)
        finally:
            adapter.stop()


def _raw(installed: Installed, path: str, *, kubeconfig: Path | None = None) -> Any:
    return json.loads(installed.cluster.kubectl("get", "--raw", path, kubeconfig=kubeconfig).stdout)


@pytest.mark.parametrize("name", APISERVICES)
def test_apiservices_become_available_with_the_chart_ca(installed: Installed, name: str) -> None:
    api = installed.cluster.wait_apiservice_available(name, timeout=30)
    assert api["spec"]["caBundle"] and not api["spec"].get("insecureSkipTLSVerify")


def test_notes_check_lists_custom_metrics(installed: Installed) -> None:
    assert "kubectl get --raw /apis/custom.metrics.k8s.io/v1beta1" in installed.notes
    for version in ("v1beta1", "v1beta2"):
        installed.cluster.wait_apiservice_available(f"{version}.custom.metrics.k8s.io", timeout=30)
        body = _raw(installed, f"/apis/custom.metrics.k8s.io/{version}")
        names = {r["name"] for r in body["resources"]}
        assert "pods/http_requests_per_second" in names, (version, sorted(names), installed.adapter.log_tail())


def test_external_metric_reaches_the_hpa_controller(installed: Installed, tmp_path: Path) -> None:
    installed.cluster.wait_apiservice_available("v1beta1.external.metrics.k8s.io", timeout=30)
    hpa = installed.cluster.service_account_kubeconfig(tmp_path / "hpa.kubeconfig", "kube-system",
                                                        "horizontal-pod-autoscaler")
    body = _raw(installed, "/apis/external.metrics.k8s.io/v1beta1/namespaces/shop/queue_messages_ready",
                kubeconfig=hpa)
    values = {item["metricLabels"].get("queue"): item["value"] for item in body["items"]}
    assert values == {"orders": "42", "emails": "7"}


def test_upgrade_keeps_the_generated_ca(installed: Installed) -> None:
    """`helm upgrade` finds the Secret (lookup) and keeps CA and certificate: running kube-apiservers
    keep trusting the adapter, and the APIServices stay Available."""
    before = _get(installed.cluster, "secret", f"{FULLNAME}-tls")["data"]
    _helm_install(installed.helm, installed.cluster, "upgrade", installed.values_file)
    assert _get(installed.cluster, "secret", f"{FULLNAME}-tls")["data"] == before
    for name in APISERVICES:
        api = installed.cluster.wait_apiservice_available(name, timeout=30)
        assert api["spec"]["caBundle"] == before["ca.crt"]


def test_upgrade_renews_a_certificate_about_to_expire(installed: Installed) -> None:
    """Within tls.generate.renewBeforeDays of expiry, `helm upgrade` issues a new CA and
    certificate; every APIService's caBundle holds the new CA and, until the next upgrade, the
    previous one. The pods keep serving the old certificate until the kubelet refreshes the mounted
    Secret (a minute or two) and the adapter reloads it, as the local adapter here does for good
    (it keeps the old files): kube-apiserver must keep reaching it meanwhile (runs last)."""
    before = _get(installed.cluster, "secret", f"{FULLNAME}-tls")["data"]
    soon = str(int(time.time()) + 86400)  # expires tomorrow, inside the 30-day window
    installed.cluster.kubectl("annotate", "secret", f"{FULLNAME}-tls", "-n", NAMESPACE, "--overwrite",
                              f"prom-autoscaler.io/not-after={soon}")
    _helm_install(installed.helm, installed.cluster, "upgrade", installed.values_file)
    after = _get(installed.cluster, "secret", f"{FULLNAME}-tls")["data"]
    assert after["ca.crt"] != before["ca.crt"] and after["tls.crt"] != before["tls.crt"]
    for name in APISERVICES:
        version, group = name.split(".", 1)
        assert _raw(installed, f"/apis/{group}/{version}")["groupVersion"] == f"{group}/{version}"
    new_ca, old_ca = (base64.b64decode(data["ca.crt"]).strip() for data in (after, before))
    for name in APISERVICES:
        bundle = base64.b64decode(_get(installed.cluster, "apiservice", name, namespace="")["spec"]["caBundle"])
        assert bundle.startswith(new_ca) and old_ca in bundle, name
    _helm_install(installed.helm, installed.cluster, "upgrade", installed.values_file)
    for name in APISERVICES:
        bundle = base64.b64decode(_get(installed.cluster, "apiservice", name, namespace="")["spec"]["caBundle"])
        assert bundle.strip() == new_ca, f"{name}: the next upgrade drops the previous CA"
