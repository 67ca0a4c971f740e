"""Beside KEDA: the chart installed with the real `helm` into the API-server stand-in where KEDA's Helm
release already serves v1beta1.external.metrics.k8s.io. The install refuses to take it over, naming the
owner and the value to turn off; with external metrics off it installs (custom metrics only) and KEDA's
APIService is left alone; `apiService.takeOver=true` passes the chart's guard, and Helm's own ownership
check then asks for the object to be handed to the release (its meta.helm.sh annotations)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.fixtures.standin import start_standin
from tests.integration.chart.conftest import CHART, FULLNAME, NAMESPACE, RELEASE, Helm

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

EXTERNAL = "v1beta1.external.metrics.k8s.io"
KEDA_APISERVICE = {
    "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
    "metadata": {"name": EXTERNAL, "labels": {"app.kubernetes.io/managed-by": "Helm"},
                 "annotations": {"meta.helm.sh/release-name": "keda", "meta.helm.sh/release-namespace": "keda"}},
    "spec": {"group": "external.metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
             "versionPriority": 100, "insecureSkipTLSVerify": True,
             "service": {"name": "keda-operator-metrics-apiserver", "namespace": "keda", "port": 443}}}


def test_the_chart_refuses_to_take_over_kedas_external_metrics_unless_told(helm: Helm, tmp_path: Path) -> None:
    with start_standin(tmp_path / "standin") as cluster:
        cluster.ensure_namespace(NAMESPACE)
        cluster.kubectl("apply", "-f", "-", input=json.dumps(KEDA_APISERVICE))

        def install(verb: str, *sets: str):
            return helm.run(verb, RELEASE, str(CHART), "--namespace", NAMESPACE, "--kubeconfig", str(cluster.kubeconfig),
                            "--disable-openapi-validation", "--set", "podDisruptionBudget.enabled=false",
                            "--set", "controller.podDisruptionBudget.enabled=false",
                            *(arg for s in sets for arg in ("--set", s)), timeout=60)

        def served_by() -> str:
            api = json.loads(cluster.kubectl("get", "apiservice", EXTERNAL, "-o", "json").stdout)
            return f"{api['spec']['service']['namespace']}/{api['spec']['service']['name']}"

        refused = install("install")
        assert refused.returncode != 0
        assert (f"APIService {EXTERNAL} is already owned by Helm release keda/keda (service "
                "keda/keda-operator-metrics-apiserver): only one server may serve it. Set "
                "apiService.externalMetrics.enabled=false to run beside it") in refused.output, refused.output
        assert served_by() == "keda/keda-operator-metrics-apiserver"

        beside = install("install", "apiService.externalMetrics.enabled=false")
        assert beside.returncode == 0, beside.output
        assert served_by() == "keda/keda-operator-metrics-apiserver"
        ours = json.loads(cluster.kubectl("get", "apiservice", "v1beta2.custom.metrics.k8s.io", "-o", "json").stdout)
        assert ours["spec"]["service"]["name"] == FULLNAME
        again = install("upgrade", "apiService.externalMetrics.enabled=false")  # our own APIServices are no owner
        assert again.returncode == 0, again.output

        taken = install("upgrade", "apiService.takeOver=true")  # past the chart's guard: Helm's own ownership check
        assert "already owned by" not in taken.output
        assert taken.returncode != 0 and "meta.helm.sh/release-name" in taken.output, taken.output
        assert served_by() == "keda/keda-operator-metrics-apiserver"
