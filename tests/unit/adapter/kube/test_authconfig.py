"""The extension-apiserver-authentication ConfigMap: its JSON-in-string values, read at start and
followed by a watch."""

import pytest

from adapter.kube.authconfig import AuthConfigWatcher, parse_auth_configmap
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


def test_auth_configmap_values_are_json_lists():
    config = parse_auth_configmap({
        "client-ca-file": "CA1", "requestheader-client-ca-file": "CA2",
        "requestheader-allowed-names": '["front-proxy-client"]',
        "requestheader-username-headers": '["X-Remote-User"]',
        "requestheader-group-headers": '["X-Remote-Group"]',
        "requestheader-extra-headers-prefix": '["X-Remote-Extra-"]',
        "requestheader-uid-headers": "not json"})
    assert config.client_ca_pem == b"CA1" and config.requestheader_ca_pem == b"CA2"
    assert config.allowed_names == ("front-proxy-client",)
    assert (config.username_headers, config.group_headers, config.extra_prefixes) == (
        ("X-Remote-User",), ("X-Remote-Group",), ("X-Remote-Extra-",))
    assert config.uid_headers == ()


def test_auth_configmap_empty_allowed_names():
    assert parse_auth_configmap({"requestheader-allowed-names": "[]"}).allowed_names == ()


@pytest.mark.parametrize("raw", [
    pytest.param("front-proxy-client", id="not JSON"),
    pytest.param('"front-proxy-client"', id="a JSON string, not an array"),
    pytest.param('["front-proxy-client", 7]', id="a non-string entry"),
])
def test_malformed_allowed_names_trust_no_front_proxy_instead_of_every_one(raw):
    """An empty list means 'any CN the front-proxy CA signed'; an unreadable value used to become
    that empty list, widening trust. Now it allows no name at all until the ConfigMap is fixed."""
    allowed = parse_auth_configmap({"requestheader-allowed-names": raw}).allowed_names
    assert allowed and "front-proxy-client" not in allowed and all("\x00" in name for name in allowed)


def test_allowed_names_are_kept_exactly_as_listed():
    assert parse_auth_configmap({"requestheader-allowed-names": '["a", ""]'}).allowed_names == ("a", "")
