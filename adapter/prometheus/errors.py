"""Typed errors for the Prometheus boundary.

Every failure of a Prometheus call surfaces as one `PrometheusError` subclass, so the server's
one error middleware can map it to a Status without seeing aiohttp. Messages carry the API path
and Prometheus' own error text for logs; they never include credentials or full query URLs.
Non-goal: deciding HTTP codes for our API (that is the server's job).
"""

from __future__ import annotations

__all__ = [
    "PrometheusAnswerTooLarge",
    "PrometheusBadQuery",
    "PrometheusBadResponse",
    "PrometheusError",
    "PrometheusHTTPError",
    "PrometheusTimeout",
    "PrometheusUnreachable",
]


class PrometheusError(Exception):
    """Base class: a Prometheus call failed. `path` is the API path (e.g. `/api/v1/query`)."""

    def __init__(self, message: str, *, path: str = "") -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path
        self.detail = message


class PrometheusUnreachable(PrometheusError):
    """No HTTP answer: connection refused, DNS failure, TLS handshake failure, reset."""


class PrometheusTimeout(PrometheusError):
    """Our per-call deadline passed, or Prometheus reported `errorType: timeout`/`canceled`."""


class PrometheusBadQuery(PrometheusError):
    """Prometheus rejected the query (HTTP 400 `bad_data` or 422 `execution`)."""

    def __init__(self, message: str, *, path: str = "", error_type: str = "") -> None:
        super().__init__(message, path=path)
        self.error_type = error_type


class PrometheusHTTPError(PrometheusError):
    """Any other non-success HTTP status (401/403 auth, 404 wrong URL, 5xx, ...)."""

    def __init__(self, message: str, *, path: str = "", status: int, error_type: str = "") -> None:
        super().__init__(f"HTTP {status}: {message}", path=path)
        self.status = status
        self.error_type = error_type


class PrometheusBadResponse(PrometheusError):
    """An answer that is not Prometheus' API JSON, or not of the shape its result type promises.

    `problem` is our own description of what is wrong (never the answer's text, a URL or the
    query): safe to show a client; empty when the answer could not be described safely.
    """

    def __init__(self, message: str, *, path: str = "", problem: str = "") -> None:
        super().__init__(message, path=path)
        self.problem = problem


class PrometheusAnswerTooLarge(PrometheusBadResponse):
    """The answer passed `--prometheus-max-answer-bytes`; the message (logs) names the query."""
