"""Where the `Authorization` header Prometheus gets comes from: a bearer token file or a basic-auth
password file, re-read when the file changes so rotated credentials work without a restart.

Non-goals: sending requests (the client), TLS client certificates (`kubecommon.tls`).
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable

from adapter.prometheus import errors
from adapter.prometheus.settings import PrometheusSettings

__all__ = ["FileSecret", "authorization"]


class FileSecret:
    """A secret read from a file and re-read when the file changes (mtime, size).

    Kept in the form it is sent (`render` of the file's text, e.g. a whole `Authorization` value),
    so a request re-renders nothing unless the file changed.
    """

    def __init__(self, path: str, render: Callable[[str], str]) -> None:
        self._path = path
        self._render = render
        self._stamp: tuple[int, int] | None = None
        self._value = ""

    def get(self) -> str:
        try:
            st = os.stat(self._path)
        except OSError as exc:
            if self._stamp is not None:
                return self._value  # keep the last good secret while a rotation is in progress
            raise errors.PrometheusError(f"cannot read credential file {self._path}: {exc}") from None
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp != self._stamp:
            with open(self._path, encoding="utf-8") as fh:
                # Token files usually end with a newline that is not part of the token.
                self._value = self._render(fh.read().strip())
            self._stamp = stamp
        return self._value


def authorization(settings: PrometheusSettings) -> FileSecret | None:
    """The `Authorization` header's source: the bearer token file wins over basic auth."""
    if settings.token_file:
        return FileSecret(settings.token_file, lambda token: f"Bearer {token}")
    if settings.basic_auth_password_file:
        user = settings.basic_auth_username or ""
        return FileSecret(
            settings.basic_auth_password_file,
            lambda password: "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())
    return None
