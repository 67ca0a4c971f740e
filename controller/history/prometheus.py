"""Fetch the history from Prometheus: series discovery and chunked, concurrent range queries.

`/api/v1/series` answers which series each rule's `seriesQuery` matched over the range (what the
adapter's discovery would list); `/api/v1/query_range` answers each metric query, split into
chunks of at most `chunk_points` ticks (Prometheus refuses more than 11,000 points per series),
at most `parallel` requests in flight. Each chunk's matrix is handed to the caller's `consume`
as soon as it arrives, so memory holds folded arrays, not every sample.

aiohttp rather than prometheus-api-client: measured on the benchmark's week (403,210 samples, 36
chunked range queries, 4 in flight) both take 0.8 s wall and 0.35 s CPU, since Prometheus is the
bottleneck; aiohttp needs no thread pool, is the project's HTTP client already, and keeps the
contract that holds the synchronous clients out of `controller`.

`combine=True` (the live controller: one object's metrics) asks one range query per chunk for
every job: `label_replace(q0, "prom_autoscaler_query", "0", "", "") or label_replace(q1, ...)`,
each series handed back to its job's `consume` without that label (`combined`), so an object
with k metrics costs one query a refresh, not k (one failing query fails them all, as one
failed job already failed the whole read).

Prometheus' `warnings` (a partial answer when a store is down behind Thanos or Mimir) do not stop
the run: they are kept, per query, for the report.

Non-goals: the PromQL (from `resolve`), folding samples (`fold.Accumulator`). I/O only here.
"""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import aiohttp
import orjson

from controller.history.fold import Grid, Series
from kubecommon.redirects import request_following_redirects

__all__ = ["COMBINED_LABEL", "HistoryError", "Job", "PrometheusHistory", "authorization", "chunks", "combined"]

MAX_POINTS_PER_QUERY = 11_000
COMBINED_LABEL = "prom_autoscaler_query"  # which job of a combined query a series answers


class HistoryError(RuntimeError):
    """Prometheus could not answer; the message says which query and what Prometheus said."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    what: str  # a person's name for the query, for progress and errors
    promql: str
    consume: Callable[[Iterable[Series]], None]


def combined(jobs: Sequence[Job]) -> Job:
    """One job asking every job's query at once; each answer's series go back to their own job
    (every job's `consume` called once per answer, as a chunk of its own would call it)."""
    if len(jobs) == 1:
        return jobs[0]
    promql = " or ".join(f'label_replace(({j.promql}), "{COMBINED_LABEL}", "{i}", "", "")' for i, j in enumerate(jobs))

    def consume(series: Iterable[Series]) -> None:
        parts: list[list[Series]] = [[] for _ in jobs]
        for labels, values in series:
            index = labels.get(COMBINED_LABEL, "")
            if not index.isdigit() or int(index) >= len(jobs):
                raise ValueError(f"Prometheus answered series {dict(labels)} of a combined query without its "
                                 f"{COMBINED_LABEL} label")
            parts[int(index)].append(({k: v for k, v in labels.items() if k != COMBINED_LABEL}, values))
        for job, part in zip(jobs, parts, strict=True):
            job.consume(part)

    return Job(what="; ".join(j.what for j in jobs), promql=promql, consume=consume)


def chunks(grid: Grid, chunk_points: int) -> list[tuple[float, float]]:
    """[start, end] pairs (inclusive, on the grid) of at most `chunk_points` ticks each."""
    size = max(1, min(chunk_points, MAX_POINTS_PER_QUERY))
    return [(grid.time(i), grid.time(min(i + size, grid.count) - 1)) for i in range(0, grid.count, size)]


class PrometheusHistory:
    """Range and series reads against one Prometheus (use as an async context manager)."""

    def __init__(self, url: str, *, parallel: int = 4, timeout: float = 120.0,
                 headers: Mapping[str, str] | None = None,
                 progress: Callable[[int, int], None] | None = None,
                 ssl_context: ssl.SSLContext | None = None,
                 authorization: Callable[[], str] | None = None) -> None:
        """`authorization()` gives the `Authorization` header per request (a token file re-read as it
        rotates); `ssl_context` the TLS for an https URL (CA, client certificate)."""
        self._url = url.rstrip("/")
        self._ssl = ssl_context
        self._authorization = authorization
        self._gate = asyncio.Semaphore(max(1, parallel))
        self._seconds = timeout
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._headers = dict(headers or {})
        self._sensitive = frozenset({"authorization", *(name.lower() for name in self._headers)})
        self._progress = progress
        self._session: aiohttp.ClientSession | None = None
        self._warnings: dict[str, None] = {}

    @property
    def warnings(self) -> tuple[str, ...]:
        """What Prometheus warned of (a partial answer from Thanos or Mimir, say), each `query: warning` once."""
        return tuple(self._warnings)

    async def __aenter__(self) -> PrometheusHistory:
        connector = aiohttp.TCPConnector(ssl=self._ssl) if self._ssl is not None else None
        self._session = aiohttp.ClientSession(timeout=self._timeout, connector=connector)
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._session is not None:
            await self._session.close()

    async def _post(self, path: str, form: Sequence[tuple[str, str]], what: str) -> Any:
        assert self._session is not None, "use PrometheusHistory as an async context manager"
        async with self._gate:
            try:
                headers = {**self._headers, "Content-Type": "application/x-www-form-urlencoded"}
                if self._authorization is not None:
                    headers["Authorization"] = self._authorization()
                # the credentials and configured headers go to the configured origin only (a
                # redirect elsewhere gets neither: kubecommon.redirects)
                async with request_following_redirects(
                        self._session, "POST", f"{self._url}{path}", data=urlencode(form), headers=headers,
                        sensitive=self._sensitive, timeout=self._timeout) as resp:
                    raw = await resp.read()
                    status = resp.status
            except asyncio.TimeoutError:
                raise HistoryError(f"{what}: Prometheus at {self._url} did not answer within {self._seconds:g} s: "
                                   "a smaller --chunk-points (or --step, or fewer --parallel) asks less of it "
                                   "per query") from None
            except aiohttp.ClientError as err:
                raise HistoryError(f"{what}: Prometheus at {self._url} did not answer: "
                                   f"{str(err) or type(err).__name__}") from None
            except OSError as err:  # the credential file could not be read
                raise HistoryError(f"{what}: {err}") from None
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            raise HistoryError(f"{what}: Prometheus answered HTTP {status} with no JSON: {raw[:200]!r}") from None
        if not isinstance(body, dict):
            raise HistoryError(f"{what}: Prometheus answered HTTP {status} with JSON that is not a Prometheus API "
                               f"answer: {raw[:200]!r}")
        if body.get("status") != "success":
            kind, error = str(body.get("errorType", "")), str(body.get("error", ""))
            hint = ("; a smaller --chunk-points (or a longer --step) asks less of it per query"
                    if kind == "timeout" or "too many samples" in error else "")
            raise HistoryError(f"{what}: Prometheus answered HTTP {status}: {kind} {error}".rstrip() + hint)
        for warning in body.get("warnings") or ():
            self._warnings[f"{what}: {warning}"] = None
        if "data" not in body:
            raise HistoryError(f"{what}: Prometheus answered success with no data: {raw[:200]!r}")
        return body["data"]

    async def series_shapes(self, queries: Sequence[str], start: float, end: float
                            ) -> dict[str, tuple[tuple[str, frozenset[str]], ...]]:
        """Per seriesQuery, the distinct (name, label names) of the series it matched in the range."""
        async def one(q: str) -> tuple[tuple[str, frozenset[str]], ...]:
            form = [("match[]", q), ("start", _ts(start)), ("end", _ts(end))]
            found: dict[tuple[str, frozenset[str]], None] = {}
            what = f"seriesQuery {q}"
            data = await self._post("/api/v1/series", form, what)
            if not isinstance(data, list) or not all(isinstance(labels, dict) for labels in data):
                raise HistoryError(f"{what}: Prometheus answered a series list that is not a list of label sets: "
                                   f"{str(data)[:200]}")
            for labels in data:
                name = labels.get("__name__")
                if name:
                    found[(name, frozenset(k for k in labels if k != "__name__"))] = None
            return tuple(found)

        answers = await asyncio.gather(*(one(q) for q in queries))
        return dict(zip(queries, answers, strict=True))

    async def fetch(self, jobs: Sequence[Job], grid: Grid, *, chunk_points: int = 5_000,
                    combine: bool = False) -> None:
        """Run every job over the grid, chunked (`combine`: all in one query per chunk); each
        answer goes to its job's `consume`."""
        if combine and len(jobs) > 1:
            jobs = [combined(jobs)]
        parts = chunks(grid, chunk_points)
        total = len(parts) * len(jobs)
        done = 0

        async def one(job: Job, start: float, end: float) -> None:
            nonlocal done
            form = [("query", job.promql), ("start", _ts(start)), ("end", _ts(end)), ("step", _ts(grid.step))]
            data = await self._post("/api/v1/query_range", form, job.what)
            try:
                job.consume(_matrix(data))
            except ValueError as err:  # a malformed answer, or one the history cannot hold
                raise HistoryError(f"{job.what}: {err}") from None
            done += 1
            if self._progress is not None:
                self._progress(done, total)

        if self._progress is not None:
            self._progress(0, total)
        try:
            async with asyncio.TaskGroup() as group:  # one failure cancels the rest
                for job in jobs:
                    for s, e in parts:
                        group.create_task(one(job, s, e))
        except ExceptionGroup as failed:
            raise failed.exceptions[0] from None


def _matrix(data: Any) -> Iterator[Series]:
    """The series of a range-query answer, each checked for shape (the samples: `Accumulator.add`)."""
    if not isinstance(data, dict) or data.get("resultType") != "matrix":
        kind = data.get("resultType") if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"Prometheus answered resultType {kind} where a range query gives a matrix")
    result = data.get("result")
    if not isinstance(result, list):
        raise ValueError(f"Prometheus answered a matrix whose result is {type(result).__name__}, not a list")
    for s in result:
        if not isinstance(s, dict) or not isinstance(s.get("metric"), dict):
            raise ValueError(f"Prometheus answered a series whose labels are not an object: {str(s)[:200]}")
        if not isinstance(s.get("values"), list):
            raise ValueError(f"Prometheus answered series {s['metric']} without a list of values")
        yield s["metric"], s["values"]


def authorization(*, token_file: str | None, username: str | None = None,
                  password_file: str | None = None) -> Callable[[], str] | None:
    """The `Authorization` header from a bearer token file (or basic auth with a password file), as
    the adapter's flags give it; the file is read per request, so a rotated token is used at once."""
    def read(path: str) -> str:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()

    if token_file:
        return lambda: f"Bearer {read(token_file)}"
    if username and password_file:
        return lambda: "Basic " + base64.b64encode(f"{username}:{read(password_file)}".encode()).decode()
    return None


def _ts(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".")
