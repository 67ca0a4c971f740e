"""Watch semantics: resume from a resourceVersion, selector transitions, 410 Gone, bookmarks."""

from __future__ import annotations

import pytest
from kubernetes import client, watch

from tests.fixtures.standin import start_standin
from tests.integration.standin.manifests import configmap

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def _events(v1, namespace: str, **kwargs) -> list[tuple[str, str]]:
    w = watch.Watch()
    return [(e["type"], e["object"].metadata.name)
            for e in w.stream(v1.list_namespaced_config_map, namespace, timeout_seconds=1,
                              **kwargs)]


def test_watch_resumes_after_a_resource_version(kube_standin, standin_namespace):
    with kube_standin.api_client() as api_client:
        v1 = client.CoreV1Api(api_client)
        v1.create_namespaced_config_map(standin_namespace, configmap("before", {"w": "1"}))
        listed = v1.list_namespaced_config_map(standin_namespace, label_selector="w")
        v1.create_namespaced_config_map(standin_namespace, configmap("after", {"w": "1"}))
        v1.delete_namespaced_config_map("before", standin_namespace)
        seen = _events(v1, standin_namespace, label_selector="w",
                       resource_version=listed.metadata.resource_version)
        assert seen == [("ADDED", "after"), ("DELETED", "before")]


def test_objects_leaving_a_selector_are_deleted_for_the_watcher(kube_standin, standin_namespace):
    with kube_standin.api_client() as api_client:
        v1 = client.CoreV1Api(api_client)
        created = v1.create_namespaced_config_map(standin_namespace, configmap("moving", {"w": "in"}))
        v1.patch_namespaced_config_map("moving", standin_namespace,
                                       {"metadata": {"labels": {"w": "out"}}})
        v1.patch_namespaced_config_map("moving", standin_namespace,
                                       {"metadata": {"labels": {"w": "in"}}})
        seen = _events(v1, standin_namespace, label_selector="w=in",
                       resource_version=created.metadata.resource_version)
        assert seen == [("DELETED", "moving"), ("ADDED", "moving")]


def test_too_old_resource_version_is_410_gone_and_bookmarks_arrive(tmp_path):
    with start_standin(tmp_path, "--watch-cache-size", "3", "--bookmark-interval", "0.2") as standin, \
            standin.api_client() as api_client:
        v1 = client.CoreV1Api(api_client)
        first = v1.create_namespaced_config_map("default", configmap("c0"))
        for i in range(1, 6):
            v1.create_namespaced_config_map("default", configmap(f"c{i}"))
        with pytest.raises(client.ApiException) as err:
            _events(v1, "default", resource_version=first.metadata.resource_version)
        assert err.value.status == 410
        latest = v1.list_namespaced_config_map("default").metadata.resource_version
        w = watch.Watch()
        kinds = {e["type"] for e in w.stream(v1.list_namespaced_config_map, "default",
                                               resource_version=latest, timeout_seconds=1,
                                               allow_watch_bookmarks=True)}
        assert kinds == {"BOOKMARK"}
