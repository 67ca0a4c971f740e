"""The chart's Deployment and RBAC: the adapter's flag parser accepts the rendered command line,
every file a flag names is mounted, the pod runs hardened, and RBAC holds what an aggregated API
server and its consumers need."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

import pytest

from adapter.options import ServeOptions
from adapter.options import parse as parse_serve_flags
from tests.integration.chart.conftest import CHART, FULLNAME, NAMESPACE, Rendered

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

REALISTIC = CHART / "ci" / "realistic-values.yaml"
FILE_FLAGS = ("config", "tls-cert-file", "tls-private-key-file", "prometheus-ca-file", "prometheus-token-file",
              "prometheus-client-tls-cert-file", "prometheus-client-tls-key-file",
              "prometheus-basic-auth-password-file")
SA_TOKEN_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def _adapter_args(rendered: Rendered) -> list[str]:
    container = rendered.container
    assert container["command"] == ["prom-autoscaler-adapter"]
    return list(container["args"])


def _parse(rendered: Rendered) -> ServeOptions:
    return parse_serve_flags(_adapter_args(rendered))


def _mounted(rendered: Rendered, path: str) -> dict[str, Any]:
    """The volume a file path lives on (longest mountPath prefix)."""
    mounts = sorted(rendered.container["volumeMounts"], key=lambda m: len(m["mountPath"]), reverse=True)
    for mount in mounts:
        if PurePosixPath(path).is_relative_to(mount["mountPath"]):
            volumes = rendered.adapter["spec"]["template"]["spec"]["volumes"]
            [volume] = [v for v in volumes if v["name"] == mount["name"]]
            return volume
    raise AssertionError(f"{path} is on no mounted volume (the root filesystem is read-only)")


# (values, expected PrometheusSettings fields, PrometheusSettings fields that must name a file):
# a file field the chart forgot to render would otherwise leave the mount check with nothing to check.
PROM_AUTH_CASES = [
    pytest.param({}, {"url": "http://prometheus.default.svc:9090", "token_file": None}, (), id="defaults"),
    pytest.param({"prometheus": {"url": "https://{{ .Release.Name }}-thanos.{{ .Release.Namespace }}.svc",
                                 "port": 10902, "path": "/prefix", "verb": "POST", "timeout": "15s"}},
                 {"url": "https://metrics-thanos.monitoring.svc:10902/prefix", "verb": "POST", "timeout": 15.0},
                 (), id="templated-url-port-path"),
    pytest.param({"prometheus": {"url": "https://mimir.example.com/prometheus", "port": None,
                                 "bearerToken": {"existingSecret": "mimir-token", "key": "tok"},
                                 "ca": {"existingSecret": "mimir-ca"}, "headers": {"X-Scope-OrgID": "tenant-1"}}},
                 {"url": "https://mimir.example.com/prometheus", "headers": (("X-Scope-OrgID", "tenant-1"),)},
                 ("token_file", "ca_file"), id="token-secret-ca-header"),
    pytest.param({"prometheus": {"clientCert": {"existingSecret": "prom-mtls"},
                                 "ca": {"existingConfigMap": "prom-ca", "key": "bundle.pem"}}},
                 {}, ("client_cert_file", "client_key_file", "ca_file"), id="mutual-tls"),
    pytest.param({"prometheus": {"basicAuth": {"existingSecret": "prom-basic", "username": "hpa"}}},
                 {"basic_auth_username": "hpa"}, ("basic_auth_password_file",), id="basic-auth"),
    pytest.param({"prometheus": {"bearerToken": {"serviceAccountToken": True}}},
                 {"token_file": f"{SA_TOKEN_DIR}/token"}, (), id="service-account-token"),
]


@pytest.mark.parametrize(("values", "expected", "files"), PROM_AUTH_CASES)
def test_rendered_args_are_accepted_by_the_adapter(quick_render: Callable[..., Rendered], values: dict[str, Any],
                                                   expected: dict[str, Any], files: tuple[str, ...]) -> None:
    rendered = quick_render(values)
    options = _parse(rendered)
    for field, value in expected.items():
        assert getattr(options.prometheus, field) == value, field
    for field in files:
        assert getattr(options.prometheus, field), f"{field} not rendered"
    args = _adapter_args(rendered)
    for flag in FILE_FLAGS:
        for arg in args:
            if arg.startswith(f"--{flag}="):
                path = arg.split("=", 1)[1]
                if not path.startswith(SA_TOKEN_DIR):
                    assert _mounted(rendered, path), flag
    assert options.discovery.relist_interval == 60.0
    assert options.serving.secure_port == rendered.container["ports"][0]["containerPort"]
    assert (options.serving.service_name, options.serving.service_namespace) == (FULLNAME, NAMESPACE)


def test_realistic_args(quick_render: Callable[..., Rendered]) -> None:
    options = _parse(quick_render(files=[REALISTIC]))
    assert options.prometheus.url == "https://thanos-query.monitoring.svc:10902"
    assert options.prometheus.ca_file == "/var/run/prometheus/ca/service-ca.crt"
    assert options.prometheus.token_file == f"{SA_TOKEN_DIR}/token"
    assert (options.discovery.relist_interval, options.discovery.max_age) == (120.0, 300.0)
    assert options.verbosity == 4
    # No --requestheader-*/--client-ca-file: they come from kube-system/extension-apiserver-authentication.
    assert not options.serving.skip_lookup and options.serving.authn_flags.requestheader_ca_pem == b""


def test_extra_arguments_reach_the_adapter(quick_render: Callable[..., Rendered]) -> None:
    options = _parse(quick_render({"extraArguments": ["--prometheus-max-get-url-length=8192"]}))
    assert options.prometheus.max_get_url_length == 8192


def test_pod_is_hardened_and_probed_over_https(quick_render: Callable[..., Rendered]) -> None:
    rendered = quick_render()
    pod = rendered.adapter["spec"]["template"]["spec"]
    container = rendered.container
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert container["resources"]["requests"]["cpu"] and container["resources"]["requests"]["memory"]
    for probe, path in (("livenessProbe", "/livez"), ("readinessProbe", "/readyz")):
        assert container[probe]["httpGet"] == {"path": path, "port": "https", "scheme": "HTTPS"}
    assert "emptyDir" in _mounted(rendered, _parse(rendered).serving.cert_dir.as_posix() + "/apiserver.crt")
    assert pod["automountServiceAccountToken"] is True
    assert pod["serviceAccountName"] == FULLNAME


def test_pdb_keeps_one_replica(quick_render: Callable[..., Rendered]) -> None:
    rendered = quick_render()
    pdb = rendered.one("PodDisruptionBudget", FULLNAME)
    deployment = rendered.adapter
    assert pdb["spec"]["selector"] == deployment["spec"]["selector"]
    assert pdb["spec"]["maxUnavailable"] < deployment["spec"]["replicas"]
    assert FULLNAME not in quick_render({"podDisruptionBudget": {"enabled": False}}).names("PodDisruptionBudget")


# --- RBAC --------------------------------------------------------------------------------------


def _subjects(binding: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(s["kind"], s.get("namespace", ""), s["name"]) for s in binding["subjects"]]


def _grants(role: dict[str, Any], group: str, resource: str, verb: str) -> bool:
    return any(group in rule["apiGroups"] and (resource in rule["resources"] or "*" in rule["resources"])
               and verb in rule["verbs"] for rule in role["rules"])


def test_adapter_rbac(quick_render: Callable[..., Rendered]) -> None:
    rendered = quick_render({"rbac": {"extraResources": [{"apiGroups": ["apps"], "resources": ["deployments"]}]}})
    adapter_sa = ("ServiceAccount", NAMESPACE, FULLNAME)
    assert rendered.one("ServiceAccount", FULLNAME)["metadata"]["namespace"] == NAMESPACE
    bindings = {b["roleRef"]["name"]: b for b in rendered.all("ClusterRoleBinding")}
    assert _subjects(bindings["system:auth-delegator"]) == [adapter_sa]
    [reader] = [b for b in rendered.all("RoleBinding") if b["metadata"]["namespace"] == "kube-system"]
    assert reader["metadata"]["namespace"] == "kube-system"
    assert reader["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                 "name": "extension-apiserver-authentication-reader"}
    assert _subjects(reader) == [adapter_sa]
    role = rendered.one("ClusterRole", f"{FULLNAME}-resource-reader")
    assert _subjects(bindings[f"{FULLNAME}-resource-reader"]) == [adapter_sa]
    for group, resource in (("", "pods"), ("", "nodes"), ("", "namespaces"), ("", "services"),
                            ("apps", "deployments")):
        for verb in ("get", "list", "watch"):
            assert _grants(role, group, resource, verb), (group, resource, verb)
    assert not _grants(role, "", "secrets", "get")


@pytest.mark.parametrize(("values", "groups"), [
    pytest.param({}, {"custom.metrics.k8s.io", "external.metrics.k8s.io"}, id="defaults"),
    pytest.param({"apiService": {"externalMetrics": {"enabled": False}, "resourceMetrics": {"enabled": True}},
                  "rules": {"existing": "r"}}, {"custom.metrics.k8s.io", "metrics.k8s.io"}, id="resource-metrics"),
])
def test_hpa_controller_may_read_the_served_groups(quick_render: Callable[..., Rendered], values: dict[str, Any],
                                                   groups: set[str]) -> None:
    rendered = quick_render(values)
    roles = {r["metadata"]["name"]: r for r in rendered.all("ClusterRole")}
    hpa = ("ServiceAccount", "kube-system", "horizontal-pod-autoscaler")
    granted = set()
    for binding in rendered.all("ClusterRoleBinding"):
        if hpa in _subjects(binding):
            role = roles[binding["roleRef"]["name"]]
            granted |= {g for g in groups if _grants(role, g, "pods", "get") and _grants(role, g, "pods", "list")}
            assert not _grants(role, "", "pods", "get"), "HPA bindings grant metrics groups only"
    assert granted == groups


# A values file in the prometheus-adapter chart's layout, as users have them (image, psp and
# certManager removed, as the README's migration notes say).
PROMETHEUS_ADAPTER_VALUES: dict[str, Any] = {
    "affinity": {}, "topologySpreadConstraints": [], "logLevel": 4, "metricsRelistInterval": "1m",
    "listenPort": 6443, "nodeSelector": {}, "priorityClassName": "", "namespaceOverride": "",
    "customAnnotations": {}, "customLabels": {},
    "prometheus": {"url": "http://prometheus.monitoring.svc", "port": 9090, "path": ""},
    "replicas": 1, "podSecurityContext": {"fsGroup": 10001},
    "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["all"]},
                        "readOnlyRootFilesystem": True, "runAsNonRoot": True, "runAsUser": 10001,
                        "seccompProfile": {"type": "RuntimeDefault"}},
    "rbac": {"create": True}, "serviceAccount": {"create": True, "name": None, "annotations": {}},
    "dnsConfig": {}, "resources": {},
    "livenessProbe": {"httpGet": {"path": "/healthz", "port": "https", "scheme": "HTTPS"},
                      "initialDelaySeconds": 30, "timeoutSeconds": 5},
    "readinessProbe": {"httpGet": {"path": "/healthz", "port": "https", "scheme": "HTTPS"},
                       "initialDelaySeconds": 30, "timeoutSeconds": 5},
    "rules": {"default": True, "custom": [], "existing": None, "external": []},
    "service": {"annotations": {}, "port": 443, "type": "ClusterIP"},
    "tls": {"enable": False, "ca": "", "key": "", "certificate": ""},
    "env": [], "extraArguments": [], "extraVolumes": [], "extraVolumeMounts": [], "tolerations": [],
    "podLabels": {}, "podAnnotations": {}, "deploymentAnnotations": {}, "hostNetwork": {"enabled": False},
    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
    "podDisruptionBudget": {"enabled": False, "minAvailable": None, "maxUnavailable": 1},
}


def test_prometheus_adapter_chart_values_carry_over(render: Callable[..., Rendered]) -> None:
    rendered = render(PROMETHEUS_ADAPTER_VALUES)
    options = _parse(rendered)
    assert options.prometheus.url == "http://prometheus.monitoring.svc:9090"
    assert (options.verbosity, options.discovery.relist_interval, options.serving.secure_port) == (4, 60.0, 6443)
    assert rendered.adapter["spec"]["replicas"] == 1
    assert FULLNAME not in rendered.names("PodDisruptionBudget")
    assert "v1beta1.custom.metrics.k8s.io" in rendered.names("APIService")
