"""A redirect to another origin, met by the real adapter process on its way to a real Prometheus:
discovery and metric queries still get their answers, and the other origin never sees the bearer
token, the tenant header (`X-Scope-OrgID`) or any other `--prometheus-header`, while the
configured origin gets them all (issue 26, item 3)."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from hack.stack.local_prometheus import LocalPrometheus
from tests.fixtures.adapter import start_adapter
from tests.integration.adapter.test_faults_prometheus import RATE, RULES, SESSIONS, wait_for

pytestmark = [pytest.mark.integration]

SECRETS = ("authorization", "x-scope-orgid", "x-api-key")


class _Server:
    """A threaded HTTP server whose handler is `serve(handler, body)`; records each request's
    path and headers (lower-case names)."""

    def __init__(self, serve) -> None:  # type: ignore[no-untyped-def]
        self.seen: list[tuple[str, dict[str, str]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                outer.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                serve(self, body)

            do_GET = do_POST = _any  # noqa: N815 (http.server API)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _forwarding_to(upstream: str):  # type: ignore[no-untyped-def]
    def serve(handler: BaseHTTPRequestHandler, body: bytes) -> None:
        request = urllib.request.Request(upstream + handler.path, data=body if handler.command == "POST" else None,
                                         method=handler.command,
                                         headers={"Content-Type": handler.headers.get("Content-Type") or ""})
        try:
            with urllib.request.urlopen(request, timeout=10) as resp:
                status, payload = resp.status, resp.read()
        except urllib.error.HTTPError as err:
            status, payload = err.code, err.read()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)
    return serve


def _redirecting_to(target: str):  # type: ignore[no-untyped-def]
    def serve(handler: BaseHTTPRequestHandler, body: bytes) -> None:
        handler.send_response(307)  # keeps the method and the form body
        handler.send_header("Location", target + handler.path)
        handler.send_header("Content-Length", "0")
        handler.end_headers()
    return serve


@pytest.fixture
def elsewhere(prometheus: LocalPrometheus) -> Iterator[_Server]:
    server = _Server(_forwarding_to(prometheus.url))
    yield server
    server.stop()


@pytest.mark.timeout(90)
def test_a_redirect_to_another_origin_leaves_the_credentials_and_configured_headers_behind(
        elsewhere: _Server, kube_standin, tmp_path: Path) -> None:
    front = _Server(_redirecting_to(elsewhere.url))
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
