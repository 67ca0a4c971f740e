"""Requests the HTTP parser refuses (a malformed request line or header, an oversized header
block, a bad chunked body) are answered like every other error: a `metav1.Status` JSON body,
never aiohttp's plain-text page (which carries the parser's message and, in debug mode, a
traceback), and logged as one warning line without a traceback.

These requests never reach the application, its middlewares or authentication, so the answer
says only what the parser's status says (e.g. 400 "the request could not be parsed"), nothing of
the bytes that were sent. A handler's own unexpected exception is answered by the error
middleware first; should anything still escape it, it gets a 500 Status the same way.
"""

from __future__ import annotations

import json
import logging
from http import HTTPStatus

from aiohttp import web
from aiohttp.web_protocol import RequestHandler
from aiohttp.web_request import BaseRequest
from aiohttp.web_response import StreamResponse

from kubecommon import status

__all__ = ["StatusAppRunner"]

_log = logging.getLogger(__name__)


def _status_for(code: int) -> status.StatusError:
    if code == 500:
        return status.InternalError.wrapping("an unexpected error occurred, see the adapter's log")
    known = status.status_error_from_dict(None, code)
    try:
        phrase = HTTPStatus(code).phrase.lower()
    except ValueError:
        phrase = "error"
    return type(known)(f"the request could not be parsed ({phrase})")


class _StatusRequestHandler(RequestHandler):
    def handle_error(self, request: BaseRequest, status: int = 500, exc: BaseException | None = None,
                     message: str | None = None) -> StreamResponse:
        if request.writer.output_size > 0:  # the answer has begun: aiohttp can only cut it
            return super().handle_error(request, status, exc, message)
        if status == 500:
            _log.error("unhandled error serving %s", request.remote, exc_info=exc)
        else:
            _log.warning("refused a request from %s the HTTP parser could not read (%d): %s",
                         request.remote, status, type(exc).__name__ if exc is not None else message)
        error = _status_for(status)
        body = error.to_dict()
        body["code"] = status
        response = web.Response(status=status, body=json.dumps(body).encode(),
                                content_type="application/json")
        response.force_close()
        return response


class _StatusServer(web.Server):
    def __call__(self) -> RequestHandler:
        return _StatusRequestHandler(self, loop=self._loop, **self._kwargs)


class StatusAppRunner(web.AppRunner):
    """`web.AppRunner` whose connections answer parser errors with a Status (module doc)."""

    async def _make_server(self) -> web.Server:
        server = await super()._make_server()
        server.__class__ = _StatusServer
        return server
