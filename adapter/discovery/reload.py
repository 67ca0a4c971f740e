"""Live reload of the rule file: watch it, compile a changed one, hand it over or refuse it.

A ConfigMap mounted as a volume is updated by an atomic symlink swap (`..data` points at a new
directory), so neither the file's name nor an inotify watch on it says it changed: every
`interval` the file is read again through its path and its SHA-256 compared with the loaded
one. A changed file is parsed and compiled exactly as at start; a valid one is given to `apply`
(discovery swaps the new rules in with its next relist, which `apply` starts at once), an invalid
one is refused with the same file/rule/field error as at start and the previous rules stay in
force. A refused version is not retried until the file changes again.

`state()` gives /metrics the loaded file's hash and the last reload's result and time.
Non-goals: reloading flags or the served API groups (adding or removing `resourceRules` needs a
restart; `apply` refuses it).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path

from adapter.config.errors import READ_STAGE, ConfigError, Problem, fatal_line
from adapter.config.load import parse_config
from adapter.rules.compile import CompiledConfig, compile_config

__all__ = ["ReloadRefused", "ReloadState", "RuleReloader", "file_sha256", "load_rule_file", "log_refused_at_start"]

log = logging.getLogger(__name__)


class ReloadRefused(Exception):
    """`apply` cannot take these rules while running; the message says why."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ReloadState:
    #: SHA-256 of the rule file in force
    sha256: str
    #: "success" or "failure" of the last reload attempt; "" before any
    last_result: str = ""
    last_time: float | None = None
    last_error: str = ""
    successes: int = 0
    failures: int = 0


def file_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def load_rule_file(path: str) -> tuple[CompiledConfig, str]:
    """The compiled rules of the file at `path` and the SHA-256 of exactly the text compiled."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError([Problem(source=path, reason=f"cannot read file: {err}")], stage=READ_STAGE) from err
    return compile_config(parse_config(text, source=path)), file_sha256(text)


def log_refused_at_start(err: ConfigError) -> None:
    """A rule file the adapter cannot start with, logged in prometheus-adapter's words (`fatal_line`)."""
    log.error("%s", fatal_line(err))


class RuleReloader:
    """Polls one rule file; mutable: it is the one place that records reload outcomes."""

    def __init__(self, path: str, *, loaded_sha256: str, apply: Callable[[CompiledConfig], Awaitable[None]],
                 interval: float, clock: Callable[[], float],
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self._path = path
        self._apply = apply
        self._interval = interval
        self._clock = clock
        self._sleep = sleep
        self._state = ReloadState(sha256=loaded_sha256)
        self._refused = ""  # hash of the last refused version: not retried until it changes

    def state(self) -> ReloadState:
        return self._state

    async def run(self) -> None:
        while True:
            await self._sleep(self._interval)
            try:
                await self.check()
            except Exception:  # a bug must not stop reloading for the process lifetime
                log.exception("rule file reload: unexpected error")

    async def check(self) -> bool | None:
        """One look at the file: None if unchanged (or unreadable), else whether it was taken."""
        try:
            text = Path(self._path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            log.warning("rule file reload: cannot read %s (keeping the rules in force): %s", self._path, err)
            return None
        digest = file_sha256(text)
        if digest in (self._state.sha256, self._refused):
            return None
        try:
            compiled = compile_config(parse_config(text, source=self._path))
            await self._apply(compiled)
        except (ConfigError, ReloadRefused) as err:
            self._refused = digest
            self._state = replace(self._state, last_result="failure", last_time=self._clock(),
                                  last_error=str(err), failures=self._state.failures + 1)
            log.error("rule file reload refused, the previous rules stay in force: %s", err)
            return False
        self._refused = ""
        self._state = replace(self._state, sha256=digest, last_result="success", last_time=self._clock(),
                              last_error="", successes=self._state.successes + 1)
        log.info("rule file %s reloaded (sha256 %s): %d custom, %d external rules%s", self._path, digest[:12],
                 len(compiled.custom), len(compiled.external), ", resource rules" if compiled.resource else "")
        return True
