"""Which Kubernetes credentials the controller's commands use, as kubectl and client-go choose them.

An explicit `--kubeconfig` wins; inside a pod (`KUBERNETES_SERVICE_HOST` set) the service account;
otherwise `$KUBECONFIG` (first file) or `~/.kube/config`.

Non-goals: parsing kubeconfig files (kubecommon.kube.config), merging several files.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from kubecommon.kube.config import KubeConfig, in_cluster_config, load_kube_config

__all__ = ["client_config"]


def client_config(path: str | None, env: Mapping[str, str] = os.environ) -> KubeConfig:
    """Raises `KubeConfigError` naming the file or variable that is wrong."""
    if path:
        return load_kube_config(path)
    if env.get("KUBERNETES_SERVICE_HOST"):
        return in_cluster_config(env)
    listed = [p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    return load_kube_config(listed[0] if listed else Path.home() / ".kube" / "config")
