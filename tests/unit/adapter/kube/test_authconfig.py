"""The extension-apiserver-authentication ConfigMap is read at start and followed by a watch."""

import pytest

from adapter.kube.authconfig import AuthConfigWatcher
from kubecommon.kube.errors import KubeAPIError

from tests.unit.kubecommon.kube.apiserver import eventually

CM_PATH = "/api/v1/configmaps"


async def test_changes_reach_the_listener(api):
    await api.put(CM_PATH, "extension-apiserver-authentication", "kube-system",
                  data={"requestheader-allowed-names": '["a"]'})
    await api.put(CM_PATH, "unrelated", "kube-system", data={"requestheader-allowed-names": '["zzz"]'})
    seen = []
    watcher = AuthConfigWatcher(api.client, seen.append)
    await watcher.start()
    try:
        assert seen[-1].allowed_names == ("a",)
        await api.put(CM_PATH, "extension-apiserver-authentication", "kube-system",
                      data={"requestheader-allowed-names": '["b"]'})
        await eventually(lambda: seen[-1].allowed_names == ("b",))
        assert all(c.allowed_names != ("zzz",) for c in seen)
        assert any("fieldSelector=metadata.name%3Dextension-apiserver-authentication" in c for c in api.calls)
    finally:
        await watcher.stop()


async def test_missing_configmap_is_not_fatal(api):
    seen = []
    watcher = AuthConfigWatcher(api.client, seen.append)
    await watcher.start()
    await watcher.stop()
    assert watcher.current is None and seen == []


async def test_forbidden_configmap_is_fatal(api):
    api.list_status = 403
    with pytest.raises(KubeAPIError):
        await AuthConfigWatcher(api.client, lambda _: None).start()
