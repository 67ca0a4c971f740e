"""An HTTP proxy in front of a real (or no) Prometheus whose answers a test can replace, in a
thread of its own so that the test can drive the adapter (a real subprocess) synchronously.

`FaultProxy(upstream).start()`; set `proxy.fault = lambda path, form: (status, body) or None` to
answer a request itself (None: forward it). `form` is the decoded query or form parameters.
`proxy.redirect_to = URL` answers every request with a 307 to the same path and query there
instead. `proxy.seen` holds each request's path (with its query) and headers (lower-case names).
"""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

Fault = Callable[[str, dict[str, list[str]]], "tuple[int, bytes] | None"]


class FaultProxy:
    def __init__(self, upstream: str | None) -> None:
        self.upstream = upstream
        self.fault: Fault = lambda path, form: None
        self.requests: list[tuple[str, dict[str, list[str]]]] = []
        self.seen: list[tuple[str, dict[str, str]]] = []
        self.redirect_to: str | None = None
        self._server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FaultProxy:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                form = parse_qs(parts.query) | parse_qs(body.decode("utf-8", "replace"))
                proxy.requests.append((parts.path, form))
                proxy.seen.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                if proxy.redirect_to is not None:
                    self.send_response(307)  # keeps the method and the form body
                    self.send_header("Location", proxy.redirect_to + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                answer = proxy.fault(parts.path, form)
                if answer is None:
                    answer = proxy._forward(self.command, self.path, body, self.headers.get("Content-Type"))
                status, payload = answer
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _serve  # noqa: N815 (http.server API)

            def log_message(self, format: str, *args: object) -> None:  # quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def _forward(self, method: str, path: str, body: bytes, content_type: str | None) -> tuple[int, bytes]:
        if self.upstream is None:
            return 404, b'{"status":"error","error":"no upstream"}'
        request = urllib.request.Request(self.upstream + path, data=body if method == "POST" else None,
                                         method=method, headers={"Content-Type": content_type or ""})
        try:
            with urllib.request.urlopen(request, timeout=10) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as err:
            payload = err.read()
            err.close()
            return err.code, payload
        except (urllib.error.URLError, OSError):
            return 503, b'{"status":"error","errorType":"unavailable","error":"upstream down"}'
