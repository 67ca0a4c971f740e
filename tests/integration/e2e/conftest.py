"""The end-to-end stack, started once per session, on one of two clusters:

* by default, the API-server stand-in with the adapter registered through four APIService objects, a
  private real backend scraping the sample exporter (one stack per backend, kept for the session:
  every test here runs on Prometheus and on VictoriaMetrics, ids `[prometheus]` / `[victoriametrics]`), and real `kubectl` going through the stand-in's
  aggregation layer (private, not the shared `prometheus` fixture, because the recovery test stops and
  restarts it);
* with E2E_KUBECONFIG=PATH (`make e2e KUBECONFIG=PATH`), the cluster of that kubeconfig, which must run
  what hack/stack/e2e_cluster.py describes (the chart with the suite's rules, the exporter and its
  Prometheus in e2e-system, the demo pods): the same tests then check a real kube-apiserver's
  aggregation. Tests that drive local parts (stop Prometheus, change the exporter's series, create
  objects in the stand-in, dial the adapter directly, read the demo's fake nodes) are marked
  `standin_only` and skipped there, with that reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import ssl
import subprocess
import urllib.parse
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hack.kube_standin.kubeconfig import token_and_ca
from hack.stack import e2e_cluster, metrics_stack
from hack.stack.controller_stack import wait_until
from hack.stack.local_prometheus import LocalPrometheus
from hack.stack.sample_exporter import FakePod, SampleExporter, demo_pods, populate_demo
from tests.fixtures.prometheus import BACKENDS

CLUSTER_KUBECONFIG = os.environ.get("E2E_KUBECONFIG", "")
WARM_QUERY = '/apis/custom.metrics.k8s.io/v1beta1/namespaces/shop/pods/*/http_requests_per_second'


@dataclass(frozen=False, slots=True, kw_only=True)  # frozen=False: tests restart parts of it
class Stack:
    exporter: SampleExporter
    prometheus: LocalPrometheus
    standin: metrics_stack.StandIn
    adapter: metrics_stack.AdapterProcess
    pods: tuple[FakePod, ...]
    token: str
    ca_pem: bytes

    def kubectl(self, *args: str, check: bool = True) -> Any:
        return self.standin.kubectl(*args, check=check)

    def raw(self, path: str) -> Any:
        """`kubectl get --raw PATH` (returncode, stdout, stderr)."""
        return self.standin.kubectl("get", "--raw", path, check=False)

    def raw_json(self, path: str) -> dict[str, Any]:
        result = self.raw(path)
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)

    def item_count(self, path: str) -> int:
        """How many items `kubectl get --raw PATH` lists, 0 while it fails (one kubectl run, for polls)."""
        result = self.raw(path)
        return len(json.loads(result.stdout)["items"]) if result.returncode == 0 else 0

    def api(self, path: str, *, accept: str = "application/json",
            timeout: float = 15.0) -> tuple[int, dict[str, str], Any]:
        """GET through the stand-in with our own HTTP client (admin token), to see whole bodies."""
        ctx = ssl.create_default_context(cadata=self.ca_pem.decode())
        headers = {"Accept": accept, "Authorization": f"Bearer {self.token}"}
        request = urllib.request.Request(self.standin.url + path, headers=headers)
        try:
            with urllib.request.urlopen(request, context=ctx, timeout=timeout) as resp:
                code, hdrs, body = resp.status, dict(resp.headers), resp.read()
        except urllib.error.HTTPError as err:
            code, hdrs, body = err.code, dict(err.headers), err.read()
            err.close()
        try:
            return code, hdrs, json.loads(body)
        except ValueError:
            return code, hdrs, body.decode(errors="replace")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "standin_only(reason): drives a local part of the stand-in stack; skipped "
                            "on a real cluster (E2E_KUBECONFIG)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """On a real cluster, skip the `standin_only` tests (before their module fixtures reach for local parts)."""
    if not CLUSTER_KUBECONFIG:
        return
    for item in items:
        marker = item.get_closest_marker("standin_only")
        if marker is not None:
            reason = marker.args[0] if marker.args else "drives a local part of the stack"
            item.add_marker(pytest.mark.skip(reason=f"stand-in only: {reason}"))


class ProxiedPrometheus:
    """The cluster's e2e Prometheus, queried through kube-apiserver's service proxy."""

    def __init__(self, kubectl: Any) -> None:
        self._kubectl = kubectl

    def query(self, promql: str) -> list[dict[str, Any]]:
        path = (f"/api/v1/namespaces/{e2e_cluster.SYSTEM}/services/prometheus:9090/proxy/api/v1/query?"
                + urllib.parse.urlencode({"query": promql}))
        body = json.loads(self._kubectl("get", "--raw", path).stdout)
        assert body["status"] == "success", body
        return list(body["data"]["result"])


@dataclass(frozen=False, slots=True, kw_only=True)  # frozen=False: the kube client is made on first use
class ClusterStack:
    """The same reads as Stack, against the cluster of `kubeconfig` (kubectl and the kubernetes client)."""

    kubeconfig: str
    pods: tuple[FakePod, ...]
    prometheus: ProxiedPrometheus | None = None
    _client: Any = None

    def kubectl(self, *args: str, check: bool = True) -> Any:
        result = subprocess.run(["kubectl", f"--kubeconfig={self.kubeconfig}", *args], capture_output=True,
                                text=True, timeout=60)
        if check and result.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)} failed ({result.returncode}):\n{result.stderr}")
        return result

    def raw(self, path: str) -> Any:
        """`kubectl get --raw PATH` (returncode, stdout, stderr)."""
        return self.kubectl("get", "--raw", path, check=False)

    raw_json = Stack.raw_json
    item_count = Stack.item_count

    def api(self, path: str, *, accept: str = "application/json",
            timeout: float = 15.0) -> tuple[int, dict[str, str], Any]:
        """GET with the kubeconfig's credentials (any kind: token, client certificate, exec plugin)."""
        from kubernetes import client, config

        if self._client is None:
            self._client = config.new_client_from_config(config_file=self.kubeconfig)
        api = self._client
        if hasattr(api, "param_serialize"):  # kubernetes >= 31 (openapi-generator 7): errors come back as answers
            method, url, headers, _, _ = api.param_serialize("GET", path, header_params={"Accept": accept},
                                                             auth_settings=["BearerToken"])
            resp = api.call_api(method, url, header_params=headers, _request_timeout=timeout)
            resp.read()
            code, headers, body = resp.status, dict(resp.getheaders()), resp.data
        else:  # older clients raise ApiException for a non-2xx answer
            try:
                resp = api.call_api(path, "GET", header_params={"Accept": accept}, auth_settings=["BearerToken"],
                                    _preload_content=False, _return_http_data_only=True, _request_timeout=timeout)
                code, headers, body = resp.status, dict(resp.headers), resp.data
            except client.ApiException as err:
                code, headers, body = err.status, dict(err.headers or {}), err.body or b""
        try:
            return code, headers, json.loads(body)
        except ValueError:
            return code, headers, body.decode(errors="replace") if isinstance(body, bytes) else body


# A real cluster brings its own Prometheus (e2e_cluster.py), so only the stand-in runs both backends.
STACK_BACKENDS = ["prometheus"] if CLUSTER_KUBECONFIG else sorted(BACKENDS)


def _cluster_stack() -> ClusterStack:
    cluster = ClusterStack(kubeconfig=CLUSTER_KUBECONFIG, pods=demo_pods())
    cluster.prometheus = ProxiedPrometheus(cluster.kubectl)
    wait_until(lambda: cluster.item_count(WARM_QUERY) == 4, timeout=180, interval=2,
               what="custom metrics for every shop pod (is hack/stack/e2e_cluster.py's set-up applied?)")
    return cluster


@contextlib.contextmanager
def _local_stack(backend: str, work: Path) -> Iterator[Stack]:
    exporter = SampleExporter().start()
    pods = populate_demo(exporter, demo_pods())
    prometheus = BACKENDS[backend]([exporter.address])
    try:
        prometheus.start()
        prometheus.wait_for("rate(http_requests_total[1m])", timeout=30)
        with metrics_stack.aggregated_adapter(work, prometheus_url=prometheus.url,
                                              objects=metrics_stack.cluster_objects(pods)) as (standin, adapter):
            token, ca = token_and_ca(standin.kubeconfig)
            built = Stack(exporter=exporter, prometheus=prometheus, standin=standin, adapter=adapter,
                          pods=pods, token=token, ca_pem=ca)
            # the first relist has happened and every shop pod has a rate once this lists all four
            wait_until(lambda: built.item_count(WARM_QUERY) == 4, timeout=30,
                       what="custom metrics for every shop pod")
            yield built
    finally:
        prometheus.close()
        exporter.stop()


@pytest.fixture(scope="session")
def stacks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Stack]]:
    """`get(backend)`: that backend's stack, started on first use and kept until the session ends.
    A session fixture parametrized by backend would be torn down and started again at each switch of
    backend, which `make test`'s file-by-file distribution makes frequent (measured on 2 workers, e2e,
    backtest, check-config and relist files: 134 s that way, 67 s with this; Prometheus alone 39 s)."""
    started: dict[str, Stack] = {}
    with contextlib.ExitStack() as running:
        def get(backend: str) -> Stack:
            if backend not in started:
                if CLUSTER_KUBECONFIG:
                    started[backend] = _cluster_stack()  # type: ignore[assignment]  # the same reads as Stack
                else:
                    work = tmp_path_factory.mktemp(f"e2e-{backend}")
                    started[backend] = running.enter_context(_local_stack(backend, work))
            return started[backend]

        yield get


@pytest.fixture(scope="module", params=STACK_BACKENDS)
def stack(request: pytest.FixtureRequest, stacks: Callable[[str], Stack]) -> Stack:
    return stacks(request.param)
