"""The end-to-end stack, started once per session: a private real Prometheus scraping the sample
exporter, the API-server stand-in with the adapter registered through four APIService objects,
and real `kubectl` going through the stand-in's aggregation layer.

Private (not the shared `prometheus` fixture) because the recovery test stops and restarts it.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hack.stack.controller_stack import wait_until
import yaml

from hack.stack import metrics_stack
from hack.stack.local_prometheus import LocalPrometheus
from hack.stack.sample_exporter import FakePod, SampleExporter, demo_pods, populate_demo

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


def _kubeconfig_credentials(path: Path) -> tuple[str, bytes]:
    import base64

    config = yaml.safe_load(path.read_text())
    token = next(u["user"]["token"] for u in config["users"] if "token" in u["user"])
    ca = base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"])
    return token, ca


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    work = tmp_path_factory.mktemp("e2e")
    exporter = SampleExporter().start()
    pods = populate_demo(exporter, demo_pods())
    prometheus = LocalPrometheus([exporter.address])
    try:
        prometheus.start()
        prometheus.wait_for("rate(http_requests_total[1m])")
        with metrics_stack.aggregated_adapter(work, prometheus_url=prometheus.url,
                                              objects=metrics_stack.cluster_objects(pods)) as (standin, adapter):
            token, ca = _kubeconfig_credentials(standin.kubeconfig)
            built = Stack(exporter=exporter, prometheus=prometheus, standin=standin, adapter=adapter,
                          pods=pods, token=token, ca_pem=ca)
            # the first relist has happened and every shop pod has a rate once this lists all four
            wait_until(lambda: built.item_count(WARM_QUERY) == 4, timeout=30,
                       what="custom metrics for every shop pod")
            yield built
    finally:
        prometheus.close()
        exporter.stop()
