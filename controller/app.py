"""Composition root of the controller: flags → client → caches → ports → reconcile → queue → workers.

`main(argv)` parses the run flags (controller.options), builds every part here and nowhere else,
starts them in order (HTTP port first so probes answer, then the watch caches, then leader
election and the workers) and runs until SIGTERM/SIGINT. Shutdown, in order: stop handing out
syncs and let running ones finish, save every history not yet in status (the shutdown
checkpoint), leave the election and release the Lease (a standby takes over within one retry
period), stop the caches, close the HTTP port and the client; exit 0.

Leadership: while this replica leads, the workers run; when leadership is lost the in-memory
histories are dropped (the next leader, maybe this one again, restores them from status) and the
replica returns to candidate. With `--leader-elect=false` it leads from the start.

Non-goals: behaviour. Each wired part documents its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import ssl
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import uvloop
from aiohttp import web

from controller.algorithm import ControllerConfig
from controller.algorithm.pods import ReadinessConfig
from controller.history.live import HistoryStore, LiveForecasts
from controller.history.prometheus import PrometheusHistory, authorization
from controller.history.rules import ConfigError, load_rules
from controller.history.source import ForecastSource, NoHistory
from controller.http_auth import EndpointGuard
from controller.kube.cached import cached_autoscaler
from controller.kube.events import KubeEventSink
from controller.kube.objects import API_GROUP, HPA_KIND, KIND
from controller.kube.pods import CachedPodLister, pod_cache
from controller.kube.ports import ObjectKey
from controller.kube.scale import KubeScaleClient
from controller.kube.scale_cache import CachedScaleClient
from controller.kube.status_writer import KubeStatusWriter
from controller.kubeconfig import client_config
from controller.metrics.rest import AggregatedMetricsSource
from controller.options import HistoryOptions, RunOptions, parse
from controller.preview import decision_lookup
from controller.reconcile import Reconciler
from controller.run.leader import LeaderElector
from controller.run.loop import AutoscalerLoop
from controller.run.queue import DueQueue
from controller.run.ratelimit import DefaultControllerRateLimiter
from controller.run.workers import WorkerPool
from controller.http_server import build_http_app
from controller.telemetry import ControllerTelemetry
from kubecommon.gctune import freeze_heap
from kubecommon.kube.cache import ObjectCache
from kubecommon.kube.client import KubeClient
from kubecommon.kube.config import KubeConfigError
from kubecommon.kube.errors import KubeError
from kubecommon.kube.resources import ResourceInfo, ResourceResolver
from kubecommon.kube.reviews import SubjectAccessReviewer, TokenReviewer
from kubecommon.serving import CertFiles, DynamicServingContext, ensure_self_signed
from kubecommon.tls import client_ssl_context

__all__ = ["main"]

_log = logging.getLogger("controller")
_PAS = ResourceInfo(group=API_GROUP, version="v1alpha1", resource="promautoscalers", kind=KIND, namespaced=True)
_HPA = ResourceInfo(group="autoscaling", version="v2", resource="horizontalpodautoscalers", kind=HPA_KIND,
                    namespaced=True)  # fmt: skip
_DRAIN_SECONDS = 10.0
_COALESCE_SECONDS = 0.25
_USER_AGENT = "prom-autoscaler-controller"
_CERT_POLL_SECONDS = 10.0


class StartupError(Exception):
    """The controller cannot start; the message says why and what to change."""


@dataclass(slots=True, kw_only=True)
class _Leading:
    """Whether this replica may sync now (the workers' `active`)."""

    leading: bool = False
    changed: Callable[[bool], None] = field(default=lambda leading: None)

    def set(self, leading: bool) -> None:
        if leading != self.leading:
            self.leading = leading
            self.changed(leading)


def _controller_config(o: RunOptions) -> ControllerConfig:
    return ControllerConfig(tolerance=o.tolerance, downscale_stabilization=o.downscale_stabilization,
                            readiness=ReadinessConfig(cpu_initialization_period=o.cpu_initialization_period,
                                                      initial_readiness_delay=o.initial_readiness_delay))  # fmt: skip


def _history_reader(h: HistoryOptions) -> PrometheusHistory | None:
    """The Prometheus the forecasts read history from (None without --prometheus-url)."""
    if h.prometheus_url is None:
        return None
    try:
        tls = client_ssl_context(ca_file=h.ca_file, cert_file=h.client_cert_file, key_file=h.client_key_file,
                                 insecure=h.insecure_skip_tls_verify) if h.prometheus_url.startswith("https") else None
    except (OSError, ValueError) as err:  # ssl.SSLError is an OSError
        raise StartupError(f"cannot load the TLS files for Prometheus (--prometheus-ca-file, "
                           f"--prometheus-client-tls-cert-file/-key-file): {err}") from None
    return PrometheusHistory(h.prometheus_url, parallel=4, timeout=h.timeout, headers=dict(h.headers), ssl_context=tls,
                             authorization=authorization(token_file=h.token_file, username=h.basic_auth_username,
                                                         password_file=h.basic_auth_password_file))  # fmt: skip


def _forecast_source(h: HistoryOptions, reader: PrometheusHistory | None) -> ForecastSource:
    if reader is None or h.rules is None:
        return NoHistory()
    try:
        rules = load_rules(h.rules)
    except ConfigError as err:
        raise StartupError(f"--rules: {err}") from None
    return LiveForecasts(HistoryStore(reader, rules, rules_path=h.rules, step=h.step, max_lookback=h.max_lookback,
                                      refresh=h.refresh))


class Controller:
    """Everything the controller runs, built from options; `run()` until `stop` is set."""

    def __init__(self, o: RunOptions, client: KubeClient, *, history_reader: PrometheusHistory | None = None,
                 forecasts: ForecastSource | None = None) -> None:
        loop = asyncio.get_running_loop()
        self.options, self.client = o, client
        self.telemetry = ControllerTelemetry(lease_name=o.lease_name if o.leader_elect else None,
                                             default_period=o.sync_period)
        resolver = ResourceResolver(client)
        ns = o.watch_namespace
        self.pods_cache = pod_cache(client, ns)
        self.caches = [self.pods_cache]
        self._flushes: dict[ObjectCache, Callable[[], None]] = {}
        host = socket.gethostname()
        identity = f"{host}_{uuid.uuid4()}"
        self.events = KubeEventSink(client, instance=identity, host=host)
        self.elector = (LeaderElector(client, o.lease_namespace, o.lease_name, identity,
                                      lease_duration=o.lease_duration, renew_deadline=o.renew_deadline,
                                      retry_period=o.retry_period)
                        if o.leader_elect else None)  # fmt: skip
        self.leading = _Leading(changed=self._leadership_changed)
        is_leader = self.elector.is_leader if self.elector is not None else (lambda: True)
        # Scales read from watch caches of the targeted kinds (GET /scale when they cannot answer).
        self.scale_reads = CachedScaleClient(KubeScaleClient(client, resolver), client, namespace=ns)
        self.history_reader = history_reader  # spec.prediction's history (its session opened in run)
        self.reconciler = Reconciler(
            scale=self.scale_reads, pods=CachedPodLister(self.pods_cache),
            metrics=AggregatedMetricsSource(client, resolver, observer=self.telemetry.observe_fetch),
            status=KubeStatusWriter(client), events=self.events, config=_controller_config(o),
            is_leader=is_leader, wall_clock=time.time, checkpoint_interval=o.checkpoint_interval,
            forecasts=forecasts,
        )  # fmt: skip
        self.queue: DueQueue[ObjectKey] = DueQueue(limiter=DefaultControllerRateLimiter(clock=loop.time))
        claim_only = frozenset() if o.preview_native_hpas else frozenset({HPA_KIND})
        self.loop = AutoscalerLoop(self.reconciler, self.queue, clock=loop.time, observer=self.telemetry,
                                   default_period=o.sync_period, claim_only=claim_only,
                                   wake=lambda: self.pool.wake())  # fmt: skip
        self.pool = WorkerPool(self.queue, self.loop.sync, concurrency=o.concurrent_syncs, clock=loop.time,
                               active=lambda: self.leading.leading and is_leader(),
                               on_start=self.telemetry.observe_start)  # fmt: skip
        self._watch(KIND, _PAS)
        # Native HPAs: decided in preview with the flag; always read for the conflict guard.
        self.hpa_cache = self._watch(HPA_KIND, _HPA)

    def _watch(self, kind: str, info: ResourceInfo) -> ObjectCache:
        """A watch cache whose changed keys reach the loop at most every `_COALESCE_SECONDS` (each
        status write comes back as a watch event; the loop's cost follows the changed keys)."""
        pending = asyncio.Event()  # set while a flush is scheduled

        def flush() -> None:
            pending.clear()
            self.loop.apply_changes(kind, {key: cache.get(*key) for key in cache.take_changes()})

        def changed(_: ObjectCache) -> None:
            if not pending.is_set():
                pending.set()
                asyncio.get_running_loop().call_later(_COALESCE_SECONDS, flush)

        # kept: identity metadata, spec, status but the decision's per-metric/step record (controller.kube.cached)
        cache = ObjectCache(self.client, info, namespace=self.options.watch_namespace, keep_raw=True,
                            strip=cached_autoscaler, keep_labels=False, on_change=changed,
                            track_changes=True)  # fmt: skip
        self.caches.append(cache)
        self._flushes[cache] = flush
        return cache

    def _leadership_changed(self, leading: bool) -> None:
        self.reconciler.forget_all()  # gained: restore from status; lost: someone else owns the history
        self.telemetry.set_leader(leading)
        if leading:
            self.pool.wake()

    # --- probes --------------------------------------------------------------------------------
    def ready(self) -> str | None:
        waiting = [c.info.resource for c in self.caches if not c.synced]
        return f"watch caches not synced: {', '.join(waiting)}" if waiting else None

    def healthy(self) -> str | None:
        if self.elector is not None and not self.elector.healthy(tolerance=self.options.renew_deadline):
            return f"leader lease not renewed for {self.elector.renew_age():.0f}s"
        return None

    def http_app(self, guard: EndpointGuard | None = None) -> web.Application:
        loop = asyncio.get_running_loop()
        return build_http_app(self.telemetry, ready=self.ready, healthy=self.healthy,
                              decision=decision_lookup(self.reconciler.last_report),
                              queue_depth=lambda: self.queue.depth(loop.time()),
                              running_seconds=self.pool.running_seconds,
                              middlewares=() if guard is None else (guard.middleware,))

    # --- lifecycle -----------------------------------------------------------------------------
    async def run(self, stop: asyncio.Event) -> None:
        self.events.start()
        for cache in self.caches:
            cache.start()
        if self.history_reader is not None:
            await self.history_reader.__aenter__()
        try:
            await self._wait_synced()
            await self._serve(stop)
        finally:
            if self.history_reader is not None:
                await self.history_reader.__aexit__(None, None, None)
            await self.events.stop()
            await self.scale_reads.stop()
            for cache in self.caches:
                await cache.stop()

    async def _wait_synced(self) -> None:
        for cache in list(self.caches):
            try:
                await cache.wait_synced(self.options.cache_sync_timeout)
            except KubeError as err:
                if cache is not self.hpa_cache or self.options.preview_native_hpas:
                    raise StartupError(f"cannot watch {cache.info.resource}: {err}") from None
                _log.warning("cannot read native HPAs (%s): the conflict guard covers PromAutoscalers only", err)
                await cache.stop()
                self.caches.remove(cache)
        for cache in self.caches:  # every object known (conflicts too) before the first sync
            flush = self._flushes.get(cache)
            if flush is not None:
                flush()
        freeze_heap()  # the caches' objects never move again: no full collection walks them (kubecommon.gctune)

    async def _serve(self, stop: asyncio.Event) -> None:
        """Lead or stand by until `stop`; then drain, checkpoint and release the Lease."""
        dispatcher = asyncio.create_task(self.pool.run(), name="dispatcher")
        election = asyncio.create_task(self._lead(), name="election")
        await stop.wait()
        _log.info("stopping: finishing running syncs, saving histories, releasing the lease")
        dispatcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await dispatcher
        await self.pool.drain(_DRAIN_SECONDS)
        saved = await self.reconciler.checkpoint_all()  # is_leader() holds until the renew deadline
        self.telemetry.checkpoints.inc(saved)
        election.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await election
        if self.elector is not None:
            await self.elector.release()

    async def _lead(self) -> None:
        if self.elector is None:
            self.leading.set(True)
            return
        forever = asyncio.Event()

        async def started() -> None:
            self.leading.set(True)
            await forever.wait()

        async def stopped() -> None:
            self.leading.set(False)

        while True:  # back to candidate after a lost lease
            try:
                await self.elector.run(started, stopped)
            except KubeError as err:
                _log.warning("leader election: %s", err)
            await asyncio.sleep(self.options.retry_period)


async def serve(o: RunOptions) -> int:
    try:
        config = client_config(o.kubeconfig)
    except KubeConfigError as err:
        raise StartupError(str(err)) from None
    history_reader = _history_reader(o.history)  # its TLS files and the rule file: read (and refused) before connecting
    forecasts = _forecast_source(o.history, history_reader)
    client = KubeClient(config, user_agent=_USER_AGENT)
    await client.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    controller = Controller(o, client, history_reader=history_reader, forecasts=forecasts)
    serving = _serving_context(o)
    guard = EndpointGuard(TokenReviewer(client), SubjectAccessReviewer(client),
                          always_allow=o.always_allow_paths) if serving is not None else None
    runner = web.AppRunner(controller.http_app(guard), access_log=None)
    await runner.setup()
    reload_files = None
    try:
        site = web.TCPSite(runner, o.metrics_bind_address, o.metrics_port,
                           ssl_context=None if serving is None else serving.listener)
        await site.start()
        for address in runner.addresses:  # with --metrics-port 0 this says which port was picked
            _log.info("serving /metrics, /healthz, /readyz, /debug on %s (%s)", address, "plain HTTP, no "
                      "authentication" if serving is None else "HTTPS, bearer tokens checked with the API server")
        if serving is not None and o.tls_cert_file:
            reload_files = asyncio.create_task(serving.watch_files(_CERT_POLL_SECONDS))
        await controller.run(stop)
    finally:
        if reload_files is not None:
            reload_files.cancel()
        await runner.cleanup()
        await client.close()
    return 0


def _serving_context(o: RunOptions) -> DynamicServingContext | None:
    """The metrics port's TLS (None with --metrics-secure=false): the given certificate files, or a
    self-signed certificate for this host, localhost and 127.0.0.1 (kubelet probes and Prometheus
    scrapes do not verify it; `--tls-cert-file` gives one they can)."""
    if not o.metrics_secure:
        return None
    if o.tls_cert_file and o.tls_private_key_file:
        files = CertFiles(cert_file=Path(o.tls_cert_file), key_file=Path(o.tls_private_key_file))
    else:
        cert_dir = Path(o.cert_dir) if o.cert_dir else Path(tempfile.mkdtemp(prefix="prom-autoscaler-controller-"))
        files = ensure_self_signed(cert_dir, key_algorithm="ecdsa")
    try:
        return DynamicServingContext(files, request_client_certs=False)
    except (ssl.SSLError, OSError, ValueError) as err:
        raise StartupError(f"cannot serve TLS with {files.cert_file} and {files.key_file}: {err}") from None


def main(argv: list[str]) -> int:
    options = parse(argv)
    logging.basicConfig(level=logging.DEBUG if options.verbosity >= 4 else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname).1s %(name)s] %(message)s")  # fmt: skip
    try:
        return uvloop.run(serve(options))  # as the adapter: ~2x cheaper transports than asyncio's
    except (StartupError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
