"""A resourceVersion from the future (the client saw a server that had more history, e.g. before
a restart with other contents) is answered as kube-apiserver answers it: a LIST, or a watch with
sendInitialEvents, waits up to 3 s and then fails with 504 "Too large resource version" (cause
ResourceVersionTooLarge); a plain watch stays open and sends only events newer than that version."""

from __future__ import annotations

import json
import subprocess
import time

import pytest
from kubernetes import client

from tests.integration.standin.manifests import configmap

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


def _current(v1, namespace: str) -> int:
    return int(v1.list_namespaced_config_map(namespace).metadata.resource_version)


def test_list_from_a_future_resource_version_is_504_too_large(kube_standin, standin_namespace):
    with kube_standin.api_client() as api_client:
        v1 = client.CoreV1Api(api_client)
        future = _current(v1, standin_namespace) + 1000
        with pytest.raises(client.ApiException) as caught:
            v1.list_namespaced_config_map(standin_namespace, resource_version=str(future))
    status = json.loads(caught.value.body)
    assert (caught.value.status, status["reason"], status["code"]) == (504, "Timeout", 504)
    assert status["message"].startswith(f"Timeout: Too large resource version: {future}, current: ")
    assert status["details"]["causes"] == [{"reason": "ResourceVersionTooLarge",
                                            "message": "Too large resource version"}]


def test_watch_with_initial_events_from_a_future_resource_version_ends_with_a_too_large_error(
        kube_standin, standin_namespace):
    with kube_standin.api_client() as api_client:
        future = _current(client.CoreV1Api(api_client), standin_namespace) + 1000
    path = (f"/api/v1/namespaces/{standin_namespace}/configmaps?watch=true&resourceVersion={future}"
            "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
    result = kube_standin.kubectl("get", "--raw", path, check=False)
    event = json.loads(result.stdout.splitlines()[0])
    assert (event["type"], event["object"]["code"]) == ("ERROR", 504)
    assert event["object"]["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"


def test_plain_watch_from_a_future_resource_version_sends_only_newer_events(kube_standin, standin_namespace):
    with kube_standin.api_client() as api_client:
        v1 = client.CoreV1Api(api_client)
        start_after = _current(v1, standin_namespace) + 2
        path = f"/api/v1/namespaces/{standin_namespace}/configmaps?watch=true&resourceVersion={start_after}" \
               "&timeoutSeconds=3"
        cmd = ["kubectl", f"--kubeconfig={kube_standin.kubeconfig}", "get", "--raw", path]
        watcher = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=kube_standin.env())
        try:
            time.sleep(1.0)  # the watch is open before the writes
            names = []
            for i in range(4):
                made = v1.create_namespaced_config_map(standin_namespace, configmap(f"c{i}"))
                names.append((int(made.metadata.resource_version), f"c{i}"))
            out, _ = watcher.communicate(timeout=20)
        finally:
            watcher.kill()
    seen = [json.loads(line)["object"]["metadata"]["name"] for line in out.splitlines() if line.strip()]
    assert seen == [name for rv, name in names if rv > start_after]
    assert seen  # (other writers may move the revision: the expectation follows the real versions)
