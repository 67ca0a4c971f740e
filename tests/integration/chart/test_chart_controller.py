"""The chart's controller and the component switches, rendered by the real helm binary.

- `helm lint --strict` and `helm template` for every combination of adapter.enabled ×
  controller.enabled × controller.previewNativeHpas, each rendering exactly the parts switched on;
- the rendered command lines parse with each binary's own flag parser (`controller.options`,
  `adapter.options`) and carry the values given;
- the controller pod is hardened like the adapter's and can never be selected by the adapter's
  Service; its RBAC is what the controller needs and no more;
- its metrics port: HTTPS with delegated authentication by default (the flag, HTTPS probes, the
  review rights, who may read /metrics and /debug), plain HTTP with controller.metricsSecure=false;
- the `helm test` Pod asks exactly the served group-versions with exactly that RBAC;
- bad controller values fail with a message naming the value.

The ServiceMonitors and PrometheusRule: test_chart_monitoring. The controller running on the
chart's RBAC in the API-server stand-in: test_chart_controller_standin.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from adapter.options import parse as parse_adapter_flags
from controller.options import RunOptions
from controller.options import parse as parse_controller_flags
from hack.kube_standin import rbac
from tests.integration.chart.conftest import CHART, FULLNAME, NAMESPACE, REPO, Helm, Rendered

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]

CONTROLLER = f"{FULLNAME}-controller"
CRD_GROUP = "autoscaling.prom-autoscaler.io"
METRICS_GROUPS = ("metrics.k8s.io", "custom.metrics.k8s.io", "external.metrics.k8s.io")
SWITCHES = [pytest.param(a, c, p, id=f"adapter-{'on' if a else 'off'}-controller-{'on' if c else 'off'}"
                                     f"-preview-{'on' if p else 'off'}")
            for a, c, p in itertools.product((True, False), repeat=3)]


def _switches(adapter: bool, controller: bool, preview: bool) -> dict[str, Any]:
    # readNativeHpas off, so the HPA rule shows what the preview switch alone grants.
    return {"adapter": {"enabled": adapter},
            "controller": {"enabled": controller, "previewNativeHpas": preview, "rbac": {"readNativeHpas": False}}}


def _controller_container(rendered: Rendered) -> dict[str, Any]:
    container: dict[str, Any] = rendered.one("Deployment", CONTROLLER)["spec"]["template"]["spec"]["containers"][0]
    return container


def _controller_options(rendered: Rendered) -> RunOptions:
    container = _controller_container(rendered)
    assert container["command"] == ["prom-autoscaler-controller", "run"]
    return parse_controller_flags(container["args"])


def _grants(role: dict[str, Any], group: str, resource: str, verb: str) -> bool:
    return any(group in rule.get("apiGroups", []) and (resource in rule["resources"] or "*" in rule["resources"])
               and verb in rule["verbs"] for rule in role["rules"])


def _controller_role(rendered: Rendered) -> dict[str, Any]:
    return rendered.one("ClusterRole", CONTROLLER)


# --- switches ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("adapter", "controller", "preview"), SWITCHES)
def test_each_switch_combination_lints_and_renders_its_parts(
        helm: Helm, quick_render: Callable[..., Rendered], user_tls: dict[str, Any],
        adapter: bool, controller: bool, preview: bool) -> None:
    values = _switches(adapter, controller, preview)
    lint = helm.lint({**user_tls, **values})
    assert lint.returncode == 0 and "0 chart(s) failed" in lint.output, lint.output
    rendered = quick_render(values)
    expected = {name for name, on in ((FULLNAME, adapter), (CONTROLLER, controller)) if on}
    assert rendered.names("Deployment") == expected
    assert bool(rendered.all("APIService")) is adapter
    if adapter:
        options = parse_adapter_flags(list(rendered.container["args"]))
        assert (options.serving.service_name, options.serving.service_namespace) == (FULLNAME, NAMESPACE)
    if controller:
        assert _controller_options(rendered).preview_native_hpas is preview
        role = _controller_role(rendered)
        assert _grants(role, "autoscaling", "horizontalpodautoscalers", "watch") is preview
        assert not _grants(role, "autoscaling", "horizontalpodautoscalers", "update")
    else:
        assert CONTROLLER not in rendered.names("ClusterRole") | rendered.names("ServiceAccount")


# --- the controller's command line ---------------------------------------------------------------


ARGS_CASES = [
    pytest.param({}, {"concurrent_syncs": 5, "sync_period": 15.0, "tolerance": 0.1, "downscale_stabilization": 300.0,
                      "cpu_initialization_period": 300.0, "initial_readiness_delay": 30.0, "leader_elect": True,
                      "lease_duration": 15.0, "renew_deadline": 10.0, "retry_period": 2.0, "lease_name": CONTROLLER,
                      "lease_namespace": NAMESPACE, "preview_native_hpas": False, "metrics_port": 8080,
                      "watch_namespace": None, "checkpoint_interval": 60.0, "cache_sync_timeout": 60.0,
                      "verbosity": 2, "metrics_secure": True, "tls_cert_file": None, "cert_dir": None},
                 id="defaults: kube-controller-manager's"),
    pytest.param({"controller": {"concurrentSyncs": 20, "syncPeriod": "30s", "tolerance": 0.05,
                                 "downscaleStabilization": "10m", "cpuInitializationPeriod": "3m",
                                 "initialReadinessDelay": "1m", "metricsPort": 9100, "logLevel": 4,
                                 "watchNamespace": "shop", "statusCheckpointInterval": "30s",
                                 "cacheSyncTimeout": "2m", "previewNativeHpas": True}},
                 {"concurrent_syncs": 20, "sync_period": 30.0, "tolerance": 0.05, "downscale_stabilization": 600.0,
                  "cpu_initialization_period": 180.0, "initial_readiness_delay": 60.0, "metrics_port": 9100,
                  "verbosity": 4, "watch_namespace": "shop", "checkpoint_interval": 30.0,
                  "cache_sync_timeout": 120.0, "preview_native_hpas": True}, id="every value set"),
    pytest.param({"controller": {"leaderElection": {"leaseDuration": "60s", "renewDeadline": "40s",
                                                    "retryPeriod": "5s", "resourceName": "pas-leader"}}},
                 {"lease_duration": 60.0, "renew_deadline": 40.0, "retry_period": 5.0, "lease_name": "pas-leader"},
                 id="leader election timings and lease name"),
    pytest.param({"controller": {"replicas": 1, "leaderElection": {"enabled": False}}},
                 {"leader_elect": False}, id="single replica without election"),
    pytest.param({"namespaceOverride": "autoscaling"}, {"lease_namespace": "autoscaling"},
                 id="lease in the namespace the pods run in"),
]


@pytest.mark.parametrize(("values", "expected"), ARGS_CASES)
def test_controller_flag_parser_accepts_the_rendered_args(quick_render: Callable[..., Rendered],
                                                          values: dict[str, Any], expected: dict[str, Any]) -> None:
    rendered = quick_render(values)
    options = _controller_options(rendered)
    assert {field: getattr(options, field) for field in expected} == expected
    container = _controller_container(rendered)
    assert [p["containerPort"] for p in container["ports"] if p["name"] == "metrics"] == [options.metrics_port]


def test_extra_arguments_reach_the_controller(quick_render: Callable[..., Rendered]) -> None:
    options = _controller_options(quick_render({"controller": {"extraArguments": ["--watch-namespace=shop"]}}))
    assert options.watch_namespace == "shop"


# --- pod, availability, selection ---------------------------------------------------------------


def test_controller_pod_is_hardened_probed_and_spread(quick_render: Callable[..., Rendered]) -> None:
    rendered = quick_render()
    deployment = rendered.one("Deployment", CONTROLLER)
    pod = deployment["spec"]["template"]["spec"]
    container = _controller_container(rendered)
    assert deployment["spec"]["replicas"] == 2 and _controller_options(rendered).leader_elect
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert container["resources"]["requests"]["cpu"] and container["resources"]["limits"]["memory"]
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        assert container[probe]["httpGet"] == {"path": path, "port": "metrics", "scheme": "HTTPS"}
    assert pod["serviceAccountName"] == CONTROLLER and pod["automountServiceAccountToken"] is True
    env = {e["name"]: e for e in container["env"]}
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    [term] = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"] == deployment["spec"]["selector"]["matchLabels"]
    pdb = rendered.one("PodDisruptionBudget", CONTROLLER)
    assert pdb["spec"]["selector"] == deployment["spec"]["selector"]
    assert pdb["spec"]["maxUnavailable"] < deployment["spec"]["replicas"]
    assert CONTROLLER not in quick_render({"controller": {"podDisruptionBudget": {"enabled": False}}}).names(
        "PodDisruptionBudget")


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def test_each_service_selects_only_its_own_pods(quick_render: Callable[..., Rendered]) -> None:
    """The adapter's Service is what kube-apiserver sends metric requests to: it must never pick a
    controller pod (which serves no metrics API), and the controller's must never pick an adapter."""
    rendered = quick_render()
    pods = {d["metadata"]["name"]: d["spec"]["template"]["metadata"]["labels"] for d in rendered.all("Deployment")}
    for service, port in ((FULLNAME, "https"), (CONTROLLER, "metrics")):
        spec = rendered.one("Service", service)["spec"]
        assert {name for name, labels in pods.items() if _selects(spec["selector"], labels)} == {service}
        assert [p["targetPort"] for p in spec["ports"]] == [port]
    adapter_pdb = rendered.one("PodDisruptionBudget", FULLNAME)["spec"]["selector"]["matchLabels"]
    assert not _selects(adapter_pdb, pods[CONTROLLER])


def test_controller_image_defaults_to_the_chart_image(quick_render: Callable[..., Rendered]) -> None:
    default = _controller_container(quick_render({"image": {"tag": "1.2.3"}}))
    assert default["image"] == "ghcr.io/prom-autoscaler/prom-autoscaler:1.2.3"
    own = _controller_container(quick_render({"controller": {"image": {"repository": "r.example/ctl", "tag": "9"}}}))
    assert own["image"] == "r.example/ctl:9"


# --- RBAC -----------------------------------------------------------------------------------------


def test_controller_rbac_is_what_it_needs(quick_render: Callable[..., Rendered]) -> None:
    rendered = quick_render({"controller": {"rbac": {"extraScaleTargets": [
        {"apiGroups": ["argoproj.io"], "resources": ["rollouts"]}]}}})
    role = _controller_role(rendered)
    sa = ("ServiceAccount", NAMESPACE, CONTROLLER)
    [binding] = [b for b in rendered.all("ClusterRoleBinding") if b["roleRef"]["name"] == CONTROLLER]
    assert [(s["kind"], s["namespace"], s["name"]) for s in binding["subjects"]] == [sa]
    wanted = [(CRD_GROUP, "promautoscalers", ("get", "list", "watch")),
              (CRD_GROUP, "promautoscalers/status", ("update", "patch")),
              ("", "pods", ("list", "watch")), ("", "events", ("create", "patch")),
              ("events.k8s.io", "events", ("create", "patch")),
              *((g, "pods", ("get", "list")) for g in METRICS_GROUPS),
              *(("apps", f"{r}/scale", ("get", "update")) for r in ("deployments", "statefulsets", "replicasets")),
              ("argoproj.io", "rollouts/scale", ("get", "update")),
              # scales read from watch caches of the target kinds, and a custom kind's CRD for its paths
              *(("apps", r, ("list", "watch")) for r in ("deployments", "statefulsets", "replicasets")),
              ("argoproj.io", "rollouts", ("list", "watch")),
              ("apiextensions.k8s.io", "customresourcedefinitions", ("list", "watch"))]
    for group, resource, verbs in wanted:
        for verb in verbs:
            assert _grants(role, group, resource, verb), (group, resource, verb)
    # Never more than it needs: no secrets, no writes to workloads themselves, no wildcard verbs.
    for group, resource, verb in (("", "secrets", "get"), ("apps", "deployments", "update"),
                                  (CRD_GROUP, "promautoscalers", "update"), ("", "pods", "delete"),
                                  ("autoscaling", "horizontalpodautoscalers", "update")):
        assert not _grants(role, group, resource, verb), (group, resource, verb)
    assert all("*" not in rule["verbs"] for rule in role["rules"])
    assert not _grants(role, "apps", "deployments", "get") and not _grants(role, "apps", "deployments", "patch")
    builtin_only = _controller_role(quick_render({}))
    assert not _grants(builtin_only, "apiextensions.k8s.io", "customresourcedefinitions", "list")
    # Native HPAs are read for the conflict guard unless turned off (then only with the preview).
    assert _grants(role, "autoscaling", "horizontalpodautoscalers", "watch")
    blind = _controller_role(quick_render({"controller": {"rbac": {"readNativeHpas": False}}}))
    assert not _grants(blind, "autoscaling", "horizontalpodautoscalers", "list")


def test_lease_rights_stay_in_the_release_namespace(quick_render: Callable[..., Rendered]) -> None:
    rendered = quick_render({"controller": {"leaderElection": {"resourceName": "pas-leader"}}})
    role = rendered.one("Role", f"{CONTROLLER}-leader-election")
    assert role["metadata"]["namespace"] == NAMESPACE
    by_verb = {verb: rule.get("resourceNames") for rule in role["rules"] for verb in rule["verbs"]}
    assert by_verb == {"create": None, "get": ["pas-leader"], "update": ["pas-leader"]}
    binding = rendered.one("RoleBinding", f"{CONTROLLER}-leader-election")
    assert binding["metadata"]["namespace"] == NAMESPACE and binding["roleRef"]["name"] == role["metadata"]["name"]
    assert not _grants(_controller_role(rendered), "coordination.k8s.io", "leases", "update")
    unelected = quick_render({"controller": {"replicas": 1, "leaderElection": {"enabled": False}}})
    assert f"{CONTROLLER}-leader-election" not in unelected.names("Role")


def test_rbac_create_false_leaves_controller_rbac_to_the_user(quick_render: Callable[..., Rendered]) -> None:
    rendered = quick_render({"rbac": {"create": False}})
    assert CONTROLLER not in rendered.names("ClusterRole") | rendered.names("ClusterRoleBinding")
    assert rendered.one("ServiceAccount", CONTROLLER)


# --- the metrics port: HTTPS behind delegated authentication, or plain HTTP ----------------------------


AUTH_DELEGATOR = f"{CONTROLLER}-system-auth-delegator"
READER = f"{CONTROLLER}-metrics-reader"
PROMETHEUS_SA = {"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"}
TLS_DIR = "/var/run/tls"


def _url_allowed(role: dict[str, Any], path: str, verb: str = "get") -> bool:
    """Whether a rule of `role` allows `verb` on the non-resource URL `path`, by the stand-in's RBAC
    evaluation (upstream's matching: exact, or a trailing * as a prefix)."""
    attrs = rbac.Attributes(user=rbac.UserInfo(name="reader"), verb=verb, resource_request=False, path=path)
    return any(rbac.rule_allows(rule, attrs) for rule in role["rules"])


def _probe_schemes(rendered: Rendered) -> dict[str, str | None]:
    container = _controller_container(rendered)
    return {probe: container[probe]["httpGet"].get("scheme") for probe in ("livenessProbe", "readinessProbe")}


# (values, --metrics-secure, probe scheme, reviews granted, metrics readers bound, serving cert files)
METRICS_PORT_CASES = [
    pytest.param({}, True, "HTTPS", True, [], None, id="default: HTTPS, self-signed, nobody bound"),
    pytest.param({"controller": {"metricsReaders": [PROMETHEUS_SA, {"kind": "Group", "name": "sre"}]}},
                 True, "HTTPS", True, [PROMETHEUS_SA, {"kind": "Group", "name": "sre"}], None,
                 id="metricsReaders bound to the reader role"),
    pytest.param({"controller": {"tls": {"existingSecret": "ctl-serving"}}}, True, "HTTPS", True, [],
                 "ctl-serving", id="serving certificate from a Secret"),
    pytest.param({"controller": {"metricsSecure": False, "metricsReaders": [PROMETHEUS_SA]}}, False, None, False,
                 [PROMETHEUS_SA], None, id="metricsSecure=false: plain HTTP, no reviews"),
]


@pytest.mark.parametrize(("values", "secure", "scheme", "reviews", "readers", "secret"), METRICS_PORT_CASES)
def test_metrics_port_security_follows_metrics_secure(
        quick_render: Callable[..., Rendered], values: dict[str, Any], secure: bool, scheme: str | None,
        reviews: bool, readers: list[dict[str, str]], secret: str | None) -> None:
    rendered = quick_render(values)
    container = _controller_container(rendered)
    options = _controller_options(rendered)
    assert f"--metrics-secure={str(secure).lower()}" in container["args"] and options.metrics_secure is secure
    assert _probe_schemes(rendered) == {"livenessProbe": scheme, "readinessProbe": scheme}
    # The controller may ask kube-apiserver who a caller is and what it may do, only when it must.
    delegations = [b for b in rendered.all("ClusterRoleBinding") if b["roleRef"]["name"] == "system:auth-delegator"
                   and b["subjects"][0]["name"] == CONTROLLER]
    assert [b["metadata"]["name"] for b in delegations] == ([AUTH_DELEGATOR] if reviews else [])
    for binding in delegations:
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": CONTROLLER, "namespace": NAMESPACE}]
    # Who may read: the reader role always exists; the binding only names metricsReaders.
    reader = rendered.one("ClusterRole", READER)
    bindings = [b for b in rendered.all("ClusterRoleBinding") if b["roleRef"]["name"] == READER]
    assert [b["subjects"] for b in bindings] == ([readers] if readers else [])
    # The certificate: from the Secret, mounted read only, or self-signed into the pod's /tmp.
    pod = rendered.one("Deployment", CONTROLLER)["spec"]["template"]["spec"]
    mounts = {m["name"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert mounts["tmp"]["mountPath"] == "/tmp"
    if secret:
        assert (options.tls_cert_file, options.tls_private_key_file) == (f"{TLS_DIR}/tls.crt", f"{TLS_DIR}/tls.key")
        assert mounts["tls"] == {"name": "tls", "mountPath": TLS_DIR, "readOnly": True}
        assert volumes["tls"]["secret"]["secretName"] == secret
    else:
        assert (options.tls_cert_file, options.tls_private_key_file) == (None, None)
        assert "tls" not in mounts and "tls" not in volumes
    assert reader["metadata"]["labels"]["app.kubernetes.io/component"] == "controller"


# (path, whether the metrics-reader role lets its holders get it)
READER_PATHS = [
    pytest.param("/metrics", True, id="metrics"),
    pytest.param("/debug/decisions/PromAutoscaler/shop/web", True, id="a decision document"),
    pytest.param("/debug/decisions/HorizontalPodAutoscaler/shop/web", True, id="a previewed HPA's decision"),
    pytest.param("/debug/pprof/profile", False, id="nothing else under /debug"),
    pytest.param("/metrics/extra", False, id="no prefix match on /metrics"),
    pytest.param("/apis/custom.metrics.k8s.io/v1beta1", False, id="no metrics API"),
]


@pytest.mark.parametrize(("path", "allowed"), READER_PATHS)
def test_metrics_reader_role_grants_get_on_metrics_and_decisions_only(
        quick_render: Callable[..., Rendered], path: str, allowed: bool) -> None:
    reader = quick_render().one("ClusterRole", READER)
    assert _url_allowed(reader, path) is allowed
    assert not _url_allowed(reader, path, verb="post")
    assert all("resources" not in rule for rule in reader["rules"])


# (user's probe, metricsSecure, the probe rendered)
PROBE_CASES = [
    pytest.param({"httpGet": {"path": "/livez", "port": "metrics"}, "periodSeconds": 3}, True,
                 {"httpGet": {"path": "/livez", "port": "metrics", "scheme": "HTTPS"}, "periodSeconds": 3},
                 id="httpGet without scheme gets HTTPS"),
    pytest.param({"httpGet": {"path": "/healthz", "port": "metrics", "scheme": "HTTP"}}, True,
                 {"httpGet": {"path": "/healthz", "port": "metrics", "scheme": "HTTP"}},
                 id="a scheme given is kept (e.g. behind a proxy sidecar)"),
    pytest.param({"httpGet": None, "tcpSocket": {"port": "metrics"}}, True, {"tcpSocket": {"port": "metrics"}},
                 id="other probe kinds untouched"),
    pytest.param({"httpGet": {"path": "/livez", "port": "metrics"}}, False,
                 {"httpGet": {"path": "/livez", "port": "metrics"}}, id="plain HTTP port: no scheme added"),
]


@pytest.mark.parametrize(("probe", "secure", "expected"), PROBE_CASES)
def test_overridden_probes_get_the_ports_scheme(quick_render: Callable[..., Rendered], probe: dict[str, Any],
                                                secure: bool, expected: dict[str, Any]) -> None:
    rendered = quick_render({"controller": {"metricsSecure": secure, "livenessProbe": probe}})
    # Helm merges the given probe into the default one: its timings stay, httpGet: null removes it.
    liveness = _controller_container(rendered)["livenessProbe"]
    assert {k: v for k, v in liveness.items() if k in expected or k in {"httpGet", "tcpSocket"}} == expected


def test_rbac_create_false_renders_no_metrics_rbac(quick_render: Callable[..., Rendered]) -> None:
    rendered = quick_render({"rbac": {"create": False}, "controller": {"metricsReaders": [PROMETHEUS_SA]}})
    assert not {AUTH_DELEGATOR, READER} & (rendered.names("ClusterRole") | rendered.names("ClusterRoleBinding"))


# --- helm test --------------------------------------------------------------------------------------


HELM_TEST_CASES = [
    pytest.param({}, {"/apis/custom.metrics.k8s.io/v1beta1", "/apis/custom.metrics.k8s.io/v1beta2",
                      "/apis/external.metrics.k8s.io/v1beta1", f"/apis/{CRD_GROUP}/v1alpha1"}, id="defaults"),
    pytest.param({"apiService": {"customMetrics": {"v1beta1": {"enabled": False}},
                                 "externalMetrics": {"enabled": False}, "resourceMetrics": {"enabled": True}},
                  "rules": {"existing": "my-rules"}, "controller": {"enabled": False}},
                 {"/apis/custom.metrics.k8s.io/v1beta2", "/apis/metrics.k8s.io/v1beta1"}, id="adapter only"),
    pytest.param({"adapter": {"enabled": False}}, {f"/apis/{CRD_GROUP}/v1alpha1"}, id="controller only"),
]


@pytest.mark.parametrize(("values", "paths"), HELM_TEST_CASES)
def test_helm_test_pod_asks_every_served_group_version(quick_render: Callable[..., Rendered],
                                                       values: dict[str, Any], paths: set[str]) -> None:
    rendered = quick_render(values)
    api_paths = {f"/apis/{a['spec']['group']}/{a['spec']['version']}" for a in rendered.all("APIService")}
    assert api_paths == {p for p in paths if CRD_GROUP not in p}
    pod = rendered.one("Pod", f"{FULLNAME}-test")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    asked = {c["args"][2] for c in pod["spec"]["containers"] if c["args"][:2] == ["get", "--raw"]}
    assert asked == paths and len(pod["spec"]["containers"]) == len(paths)
    assert pod["spec"]["restartPolicy"] == "Never"
    for container in pod["spec"]["containers"]:
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
    # Just enough RBAC: exactly these non-resource URLs, read only, for the test's own account.
    [rule] = rendered.one("ClusterRole", f"{FULLNAME}-test")["rules"]
    assert set(rule["nonResourceURLs"]) == paths and rule["verbs"] == ["get"] and "resources" not in rule
    [subject] = rendered.one("ClusterRoleBinding", f"{FULLNAME}-test")["subjects"]
    assert subject["name"] == pod["spec"]["serviceAccountName"]


def test_helm_test_can_be_turned_off(quick_render: Callable[..., Rendered]) -> None:
    assert quick_render({"helmTest": {"enabled": False}}).all("Pod") == []


# --- bad values ----------------------------------------------------------------------------------------


BAD_VALUES = [
    pytest.param({"controller": {"replicas": 2, "leaderElection": {"enabled": False}}},
                 "controller.replicas=2 with controller.leaderElection.enabled=false", id="replicas-without-election"),
    pytest.param({"controller": {"leaderElection": {"leaseDuration": "10s", "renewDeadline": "10s"}}},
                 "leaseDuration (10s) must exceed renewDeadline (10s)", id="lease-not-longer-than-renew"),
    pytest.param({"controller": {"rbac": {"scaleTargets": []}}},
                 "controller.rbac.scaleTargets and extraScaleTargets are both empty", id="nothing-to-scale"),
    pytest.param({"controller": {"serviceAccount": {"create": False}}},
                 "controller.serviceAccount.name is required", id="no-service-account"),
    pytest.param({"controller": {"syncPeriod": "often"}}, "controller.syncPeriod: Does not match pattern",
                 id="sync-period-not-a-duration"),
    pytest.param({"controller": {"tolerance": 1.5}}, "controller.tolerance: Must be less than 1",
                 id="tolerance-not-below-one"),
    pytest.param({"controller": {"previewNativeHPAs": True}}, "Additional property previewNativeHPAs is not allowed",
                 id="misspelt-controller-key"),
    pytest.param({"controller": {"rbac": {"extraScaleTargets": [{"apiGroups": ["apps"],
                                                                 "resources": ["deployments/scale"]}]}}},
                 "controller.rbac.extraScaleTargets.0.resources.0: Does not match pattern", id="scale-suffix-given"),
    pytest.param({"prometheusRule": {"disabled": ["NoSuchAlert"]}}, "prometheusRule.disabled.0: prometheusRule",
                 id="unknown-alert-name"),
    pytest.param({"controller": {"metricsSecure": False, "tls": {"existingSecret": "ctl-serving"}}},
                 "controller.tls.existingSecret (ctl-serving) is set with controller.metricsSecure=false",
                 id="certificate-for-a-plain-http-port"),
    pytest.param({"controller": {"metricsSecure": "yes"}}, "controller.metricsSecure: Invalid type. Expected: boolean",
                 id="metrics-secure-not-a-boolean"),
    pytest.param({"controller": {"metricsReaders": [{"kind": "ServiceAccount", "name": "prometheus"}]}},
                 "controller.metricsReaders.0: namespace is required", id="reader-service-account-without-namespace"),
    pytest.param({"controller": {"metricsReaders": [{"kind": "Serviceaccount", "name": "p", "namespace": "m"}]}},
                 "controller.metricsReaders.0.kind: controller.metricsReaders.0.kind must be one of",
                 id="reader-kind-misspelt"),
]


@pytest.mark.parametrize(("values", "message"), BAD_VALUES)
def test_bad_controller_values_fail_naming_the_value(helm: Helm, values: dict[str, Any], message: str) -> None:
    result = helm.template({"tls": {"insecureSkipTLSVerify": True}, **values})
    assert result.returncode != 0
    assert message in result.stderr, result.stderr


# --- documentation ---------------------------------------------------------------------------------


NEW_TOP_LEVEL = ("adapter", "controller", "serviceMonitor", "prometheusRule", "helmTest")


def _schema_leaves(schema: dict[str, Any], prefix: str) -> list[str]:
    """Dotted paths of every value the schema describes (objects without properties are leaves)."""
    if "properties" not in schema:
        return [prefix]
    return [leaf for key, sub in schema["properties"].items() for leaf in _schema_leaves(sub, f"{prefix}.{key}")]


def _documented(page: str) -> set[str]:
    """Values named in the docs' values table (docs/reference/values.md, generated from values.yaml):
    `a.b.c` / `d` reads as a.b.c and a.b.d; `a.b.*` as everything under a.b."""
    names: set[str] = set()
    for line in page.splitlines():
        if not line.startswith("| `"):
            continue
        prefix = ""
        for token in re.findall(r"`([^`]+)`", line.split(" | ")[0]):
            if "." in token:
                prefix = token.rsplit(".", 1)[0]
                names.add(token)
            elif prefix:
                names.add(f"{prefix}.{token}")
    return names


def test_docs_values_reference_covers_every_new_value() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    documented = _documented((REPO / "docs/reference/values.md").read_text())
    wildcards = {name[:-1] for name in documented if name.endswith(".*")}
    missing = [leaf for key in NEW_TOP_LEVEL for leaf in _schema_leaves(schema["properties"][key], key)
               if leaf not in documented and not any(leaf.startswith(w) for w in wildcards)]
    assert missing == []


def test_realistic_values_configure_the_controller(quick_render: Callable[..., Rendered]) -> None:
    rendered = quick_render(files=[CHART / "ci" / "realistic-values.yaml"])
    options = _controller_options(rendered)
    assert (options.concurrent_syncs, options.downscale_stabilization, options.preview_native_hpas) == (10, 600.0, True)
    assert rendered.one("Deployment", CONTROLLER)["spec"]["replicas"] == 3
    assert _grants(_controller_role(rendered), "argoproj.io", "rollouts/scale", "update")
    assert rendered.names("ServiceMonitor") == {FULLNAME, CONTROLLER}
    [reader_binding] = [b for b in rendered.all("ClusterRoleBinding") if b["roleRef"]["name"] == READER]
    assert reader_binding["subjects"][0]["name"] == "kube-prometheus-stack-prometheus"
    rule = rendered.one("PrometheusRule", FULLNAME)
    assert all(r["labels"]["team"] == "platform" for g in rule["spec"]["groups"] for r in g["rules"])


# Flags the chart leaves at the binary's default on purpose.
NOT_FROM_VALUES = {
    "--help": "not a setting",
    "--kubeconfig": "in a pod the controller uses its ServiceAccount (in-cluster config)",
    "--metrics-bind-address": "0.0.0.0, so the kubelet's probes and Prometheus reach the pod",
    "--cert-dir": "the binary's default, a private directory under /tmp (the pod's emptyDir)",
    "--authorization-always-allow-paths": "the binary's default, /healthz,/livez,/readyz: what the probes ask",
    "--prometheus-auth-incluster": "prometheus.bearerToken.serviceAccountToken names the token file instead, as "
                                   "for the adapter",
}
# Two renders between them set every prometheus.* credential (some exclude each other).
PROMETHEUS_ACCESS = (
    {"timeout": "20s", "ca": {"existingSecret": "prom-ca"}, "clientCert": {"existingSecret": "prom-client"},
     "bearerToken": {"existingSecret": "prom-token"}, "headers": {"X-Scope-OrgID": "tenant-1"}},
    {"insecureSkipTLSVerify": True, "basicAuth": {"existingSecret": "prom-basic", "username": "bob"}},
)


def test_every_controller_flag_has_a_value(quick_render: Callable[..., Rendered]) -> None:
    """A flag added to controller.options without a chart value (or an exclusion above) fails here."""
    from controller.options import build_parser

    flags = {max(a.option_strings, key=len) for a in build_parser()._actions if a.option_strings}
    given: set[str] = set()
    for prometheus in PROMETHEUS_ACCESS:
        rendered = quick_render({"controller": {"previewNativeHpas": True, "watchNamespace": "shop",
                                                "tls": {"existingSecret": "ctl-serving"}}, "prometheus": prometheus})
        given |= {arg.split("=", 1)[0] for arg in _controller_container(rendered)["args"]}
    aliases = {"--horizontal-pod-autoscaler-sync-period": "--sync-period"}
    given |= {long for long, short in aliases.items() if short in given}
    assert flags - given - set(NOT_FROM_VALUES) == set()
