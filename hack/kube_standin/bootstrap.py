"""The objects a fresh kube-apiserver (plus kubeadm) would have: namespaces, bootstrap RBAC,
the `kube-system/extension-apiserver-authentication` ConfigMap, local APIServices, a node and
the `default/kubernetes` Service.

The ClusterRoles are the upstream bootstrap policy's rules for the roles aggregated servers and
their consumers rely on (aggregated-apiserver.md §1.9, §2.4); `view`/`edit`/`admin` are flattened
(no aggregation controller here). Pure: returns plain objects for the caller to create.
"""

from __future__ import annotations

import json
from typing import Any

from .resources import BUILTIN, GROUP_PRIORITY

NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "deletecollection", "patch", "update"]
_WORKLOADS = ["pods", "services", "endpoints", "configmaps", "events", "serviceaccounts",
              "persistentvolumeclaims"]


def _role(name: str, rules: list[dict[str, Any]], *, kind: str = "ClusterRole",
          namespace: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
                            "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta,
            "rules": rules}


def _binding(name: str, role: str, subjects: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": subjects}


def _group(name: str) -> dict[str, str]:
    return {"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": name}


def cluster_roles() -> list[dict[str, Any]]:
    view = [{"apiGroups": [""], "resources": _WORKLOADS + ["pods/log", "pods/status",
                                                           "namespaces", "resourcequotas"],
             "verbs": READ},
            {"apiGroups": ["apps"], "resources": ["deployments", "statefulsets", "replicasets",
                                                  "daemonsets", "deployments/scale",
                                                  "statefulsets/scale", "replicasets/scale"],
             "verbs": READ},
            {"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"], "verbs": READ},
            {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": READ},
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": READ}]
    edit = [dict(rule, verbs=READ + WRITE) for rule in view]
    return [
        _role("cluster-admin", [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
                                {"nonResourceURLs": ["*"], "verbs": ["*"]}]),
        _role("system:discovery", [{"nonResourceURLs": [
            "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*",
            "/readyz", "/version", "/version/"], "verbs": ["get"]}]),
        _role("system:public-info-viewer", [{"nonResourceURLs": [
            "/healthz", "/livez", "/readyz", "/version", "/version/"], "verbs": ["get"]}]),
        _role("system:basic-user", [
            {"apiGroups": ["authorization.k8s.io"], "resources": [
                "selfsubjectaccessreviews", "selfsubjectrulesreviews"], "verbs": ["create"]},
            {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"],
             "verbs": ["create"]}]),
        _role("system:auth-delegator", [
            {"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"],
             "verbs": ["create"]},
            {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"],
             "verbs": ["create"]}]),
        _role("system:controller:horizontal-pod-autoscaler", [
            {"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers"],
             "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["autoscaling"], "resources": ["horizontalpodautoscalers/status"],
             "verbs": ["update"]},
            {"apiGroups": ["*"], "resources": ["*/scale"], "verbs": ["get", "update"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
            {"apiGroups": ["metrics.k8s.io"], "resources": ["pods"], "verbs": ["list", "watch"]},
            {"apiGroups": ["custom.metrics.k8s.io"], "resources": ["*"],
             "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["external.metrics.k8s.io"], "resources": ["*"],
             "verbs": ["get", "list", "watch"]},
            {"apiGroups": ["", "events.k8s.io"], "resources": ["events"],
             "verbs": ["create", "patch", "update"]}]),
        _role("view", view),
        _role("edit", edit),
        _role("admin", edit + [{"apiGroups": ["rbac.authorization.k8s.io"],
                                "resources": ["roles", "rolebindings"], "verbs": READ + WRITE}]),
    ]


def cluster_role_bindings() -> list[dict[str, Any]]:
    return [
        _binding("cluster-admin", "cluster-admin", [_group("system:masters")]),
        _binding("system:discovery", "system:discovery", [_group("system:authenticated")]),
        _binding("system:basic-user", "system:basic-user", [_group("system:authenticated")]),
        _binding("system:public-info-viewer", "system:public-info-viewer",
                 [_group("system:authenticated"), _group("system:unauthenticated")]),
        _binding("system:controller:horizontal-pod-autoscaler",
                 "system:controller:horizontal-pod-autoscaler",
                 [{"kind": "ServiceAccount", "name": "horizontal-pod-autoscaler",
                   "namespace": "kube-system"}]),
    ]


def namespaced_objects() -> list[dict[str, Any]]:
    return [
        _role("extension-apiserver-authentication-reader", [{
            "apiGroups": [""], "resources": ["configmaps"],
            "resourceNames": ["extension-apiserver-authentication"], "verbs": READ}],
            kind="Role", namespace="kube-system"),
        {"apiVersion": "v1", "kind": "ServiceAccount",
         "metadata": {"name": "horizontal-pod-autoscaler", "namespace": "kube-system"}},
    ]


def authentication_configmap(*, client_ca: bytes, front_proxy_ca: bytes,
                             allowed_names: list[str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "extension-apiserver-authentication", "namespace": "kube-system"},
            "data": {
                "client-ca-file": client_ca.decode(),
                "requestheader-client-ca-file": front_proxy_ca.decode(),
                "requestheader-allowed-names": json.dumps(allowed_names),
                "requestheader-username-headers": json.dumps(["X-Remote-User"]),
                "requestheader-group-headers": json.dumps(["X-Remote-Group"]),
                "requestheader-extra-headers-prefix": json.dumps(["X-Remote-Extra-"]),
                "requestheader-uid-headers": json.dumps(["X-Remote-Uid"]),
            }}


def local_apiservices() -> list[dict[str, Any]]:
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    for t in BUILTIN:
        if (t.group, t.version) in seen:
            continue
        seen[(t.group, t.version)] = local_apiservice(t.group, t.version,
                                                      GROUP_PRIORITY.get(t.group, 1000), 15)
    return list(seen.values())


def local_apiservice(group: str, version: str, group_priority: int,
                     version_priority: int) -> dict[str, Any]:
    name = f"{version}.{group}" if group else version
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": name, "labels": {"kube-aggregator.kubernetes.io/automanaged": "onstart"}},
            "spec": {"group": group, "version": version, "groupPriorityMinimum": group_priority,
                     "versionPriority": version_priority, "service": None},
            "status": {"conditions": [{"type": "Available", "status": "True", "reason": "Local",
                                       "message": "Local APIServices are always available"}]}}


def node(name: str) -> dict[str, Any]:
    capacity = {"cpu": "8", "memory": "32Gi", "pods": "250", "ephemeral-storage": "100Gi"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {
                "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64", "node-role.kubernetes.io/worker": ""}},
            "spec": {"podCIDR": "10.244.0.0/24"},
            "status": {"capacity": capacity, "allocatable": dict(capacity),
                       "addresses": [{"type": "InternalIP", "address": "127.0.0.1"},
                                     {"type": "Hostname", "address": name}],
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "message": "kubelet is posting ready status"}],
                       "nodeInfo": {"kubeletVersion": "v1.32.0-standin", "osImage": "stand-in",
                                    "operatingSystem": "linux", "architecture": "amd64",
                                    "containerRuntimeVersion": "standin://1.0",
                                    "kernelVersion": "6.0.0-standin", "kubeProxyVersion": "",
                                    "bootID": f"boot-{name}", "machineID": f"machine-{name}",
                                    "systemUUID": f"uuid-{name}"}}}


def kubernetes_service(port: int) -> list[dict[str, Any]]:
    return [
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "kubernetes", "namespace": "default",
                      "labels": {"component": "apiserver", "provider": "kubernetes"}},
         "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "https", "port": 443,
                                                       "targetPort": port, "protocol": "TCP"}]}},
        {"apiVersion": "v1", "kind": "Endpoints",
         "metadata": {"name": "kubernetes", "namespace": "default"},
         "subsets": [{"addresses": [{"ip": "127.0.0.1"}],
                      "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]},
    ]
