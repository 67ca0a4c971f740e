"""A redirect to another origin, met by the real adapter process on its way to a real Prometheus:
discovery and metric queries still get their answers, and the other origin never sees the bearer
token, the tenant header (`X-Scope-OrgID`) or any other `--prometheus-header`, while the
configured origin gets them all (issue 26, item 3)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hack.stack.local_prometheus import LocalPrometheus
from tests.fixtures.adapter import start_adapter
from tests.integration.adapter.fault_proxy import FaultProxy
from tests.integration.adapter.test_faults_prometheus import RATE, RULES, SESSIONS, wait_for

pytestmark = [pytest.mark.integration]

SECRETS = ("authorization", "x-scope-orgid", "x-api-key")


@pytest.fixture
def elsewhere(prometheus: LocalPrometheus) -> Iterator[FaultProxy]:
    """The other origin: forwards to the real Prometheus and records what it was sent."""
    server = FaultProxy(prometheus.url).start()
    yield server
    server.stop()


@pytest.mark.timeout(90)
def test_a_redirect_to_another_origin_leaves_the_credentials_and_configured_headers_behind(
        elsewhere: FaultProxy, kube_standin, tmp_path: Path) -> None:
    front = FaultProxy(None).start()
    front.redirect_to = elsewhere.url
    token = tmp_path / "token"
    token.write_text("secret-token\n")
    try:
        with start_adapter(tmp_path / "adapter", prometheus_url=front.url, kubeconfig=kube_standin.kubeconfig,
                           rules=RULES, args=["--insecure-disable-auth", f"--prometheus-token-file={token}",
                                              "--prometheus-header=X-Scope-OrgID=tenant-a",
                                              "--prometheus-header=X-Api-Key=k"]) as adapter:
            wait_for(lambda: all(adapter.request(p).status == 200 for p in (RATE, SESSIONS)), 30,
                     "both metrics answered through the redirect")
    finally:
        front.stop()
    assert front.seen and all(
        (headers.get("authorization"), headers.get("x-scope-orgid"), headers.get("x-api-key"))
        == ("Bearer secret-token", "tenant-a", "k") for _, headers in front.seen)
    paths = {path.split("?")[0] for path, _ in elsewhere.seen}
    assert {"/api/v1/series", "/api/v1/query"} <= paths
    leaked = [(path, name) for path, headers in elsewhere.seen for name in SECRETS if name in headers]
    assert leaked == []
