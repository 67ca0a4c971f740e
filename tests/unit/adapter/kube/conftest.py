"""The review and auth-ConfigMap tests share the kube client fixture of `tests.unit.kubecommon.kube`."""

from tests.unit.kubecommon.kube.conftest import api

__all__ = ["api"]
