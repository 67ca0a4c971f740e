"""Kubernetes API faults against the real adapter and API-server stand-in processes:

* the stand-in stopped with SIGSTOP (silent, not refusing): a request needing a TokenReview is
  answered within one review deadline (10 s), not after five 10 s attempts;
* the stand-in restarted with other contents (as after a restore): the adapter serves the new
  pods and none of the deleted ones, once its watch cache relisted.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import pytest

from kubecommon.kube.reviews import REVIEW_DEADLINE
from hack.stack.local_prometheus import LocalPrometheus
from hack.stack.processes import free_port
from kubecommon.kube.cache import RELIST_AFTER_OUTAGE
from tests.fixtures.adapter import start_adapter
from tests.fixtures.standin import StandIn, start_standin

pytestmark = [pytest.mark.integration]

RULES = r"""
rules:
- seriesQuery: 'http_requests_total{namespace!="",pod!=""}'
  resources: {overrides: {namespace: {resource: namespace}, pod: {resource: pod}}}
  name: {matches: "^(.*)_total$", as: "${1}_per_second"}
  metricsQuery: 'sum(rate(<<.Series>>{<<.LabelMatchers>>}[1m])) by (<<.GroupBy>>)'
"""
ALL_PODS = "/apis/custom.metrics.k8s.io/v1beta1/namespaces/shop/pods/*/http_requests_per_second"


def pod(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "shop"},
            "spec": {"containers": [{"name": "app", "image": "registry.example/app:1"}]}}


def populate(standin: StandIn, *names: str) -> None:
    standin.ensure_namespace("shop")
    standin.apply(*(pod(n) for n in names))


@pytest.mark.timeout(90)
def test_a_silent_api_server_costs_a_request_one_review_deadline(prometheus: LocalPrometheus, tmp_path: Path) -> None:
    with start_standin(tmp_path / "standin") as standin, \
            start_adapter(tmp_path / "adapter", prometheus_url=prometheus.url, kubeconfig=standin.kubeconfig,
                          rules=RULES, args=["--authentication-token-webhook-cache-ttl=0s"]) as adapter:
        path = "/apis/custom.metrics.k8s.io/v1beta1"
        assert adapter.request(path, token=standin.admin_token).status == 200
        os.kill(standin.process.pid, signal.SIGSTOP)
        try:
            started = time.monotonic()
            reply = adapter.request(path, token=standin.admin_token, timeout=60)
            took = time.monotonic() - started
        finally:
            os.kill(standin.process.pid, signal.SIGCONT)
        assert (reply.status, reply.json()["reason"]) == (401, "Unauthorized")
        # one deadline, not five attempts of 10 s each (56 s before): generous for a loaded machine
        assert took < REVIEW_DEADLINE * 2, f"answered after {took:.1f}s"
        assert adapter.request(path, token=standin.admin_token).status == 200  # back once it answers


@pytest.mark.timeout(120)
def test_api_server_restarted_with_other_contents_serves_new_pods_and_forgets_deleted_ones(
        prometheus: LocalPrometheus, tmp_path: Path) -> None:
    web = ["web-7d9f8-abcde", "web-7d9f8-fghij", "web-7d9f8-klmno"]  # series exist for these
    port = free_port()
    with contextlib.ExitStack() as stack:
        first = stack.enter_context(start_standin(tmp_path / "first", "--port", str(port)))
        populate(first, web[0], web[1])
        adapter = stack.enter_context(start_adapter(
            tmp_path / "adapter", prometheus_url=prometheus.url, kubeconfig=first.kubeconfig, rules=RULES,
            args=["--insecure-disable-auth"]))

        def served() -> list[str]:
            reply = adapter.request(ALL_PODS)
            return sorted(i["describedObject"]["name"] for i in reply.json()["items"]) if reply.status == 200 else []

        deadline = time.monotonic() + 30
        while served() != [web[0], web[1]]:
            assert time.monotonic() < deadline, served()
            time.sleep(0.2)
        os.kill(first.process.pid, signal.SIGKILL)
        time.sleep(RELIST_AFTER_OUTAGE + 1)  # down for longer than the caches trust a resume
        with start_standin(tmp_path / "second", "--port", str(port), data_dir=first.data_dir) as second:
            populate(second, web[1], web[2])  # web[0] was deleted meanwhile, web[2] is new
            deadline = time.monotonic() + 30
            while served() != [web[1], web[2]]:
                assert time.monotonic() < deadline, f"still serving {served()}"
                time.sleep(0.2)
            for _ in range(10):  # and it stays that way
                assert served() == [web[1], web[2]]
                time.sleep(0.1)
