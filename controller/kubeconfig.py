"""Which Kubernetes credentials the controller's commands use, in controller-runtime's order.

`--kubeconfig` wins; then `$KUBECONFIG` (every listed file, merged as kubectl merges them); then,
inside a pod (`KUBERNETES_SERVICE_HOST` set), the service account; then `~/.kube/config`. A pod
that sets `$KUBECONFIG` (to manage another cluster, say) therefore gets that file, not its own
service account, as a controller-runtime manager would.

Non-goals: parsing kubeconfig files and the merge rules themselves (kubecommon.kube.config).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from kubecommon.kube.config import KubeConfig, in_cluster_config, load_kube_config

__all__ = ["client_config"]


def client_config(path: str | None, env: Mapping[str, str] = os.environ, *,
                  home: Path | None = None) -> KubeConfig:
    """Raises `KubeConfigError` naming the file or variable that is wrong."""
    if path:
        return load_kube_config(path)
    listed = os.pathsep.join(p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p)
    if listed:
        return load_kube_config(listed)
    if env.get("KUBERNETES_SERVICE_HOST"):
        return in_cluster_config(env)
    return load_kube_config((home or Path.home()) / ".kube" / "config")
