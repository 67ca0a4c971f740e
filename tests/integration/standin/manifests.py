"""Objects the stand-in tests create (plain dicts, as kubectl and the kubernetes package send them)."""

from __future__ import annotations


def configmap(name: str, labels: dict[str, str] | None = None,
              data: dict[str, str] | None = None) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "labels": labels or {}}, "data": data or {"k": "v"}}


def deployment(name: str, replicas: int) -> dict:
    """Pods labelled app=<name>, one container requesting 250m CPU."""
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "app", "image": "nginx",
                                                           "resources": {"requests": {"cpu": "250m"}}}]}}}}
