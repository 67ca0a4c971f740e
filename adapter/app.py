"""Composition root of the adapter: flags → config → clients → caches → services → HTTPS server.

`main(argv)` parses flags (adapter.options), loads and compiles the rule file (a bad file
exits 1 naming file, rule and field, before anything listens), then runs `serve` until SIGTERM or
SIGINT. While serving, the rule file is watched and reloaded live (adapter.discovery.reload).
Everything is constructed here and nowhere else; constructors only assign, and anything
that connects is started explicitly in order, and closed in reverse order.

Non-goals: behaviour. Each wired part documents its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import platform
import signal
import ssl
import sys
import time
from collections.abc import Callable, Mapping
from importlib import metadata

import uvloop
from aiohttp import web

from adapter.config.errors import ConfigError
from adapter.discovery.registry import Registry
from adapter.discovery.relist import Discovery
from adapter.discovery.reload import ReloadRefused, RuleReloader, load_rule_file, log_refused_at_start
from adapter.discovery.served import OverrideNotServed, check_overrides_served
from adapter.kube.authconfig import AuthConfigWatcher, AuthMaterial
from kubecommon.kube.caches import KubeObjectCaches
from kubecommon.kube.client import KubeClient
from kubecommon.kube.config import KubeConfig, KubeConfigError, in_cluster_config, load_kube_config
from kubecommon.kube.errors import KubeError
from kubecommon.gctune import freeze_heap
from kubecommon.kube.resources import ResourceResolver
from kubecommon.kube.reviews import SubjectAccessReviewer, TokenReviewer
from adapter.options import OptionsError, ServeOptions, parse
from adapter.prometheus.api import PrometheusAPI
from adapter.prometheus.client import PrometheusClient
from adapter.prometheus.instrumented import InstrumentedPrometheus
from adapter.rules.compile import CompiledConfig
from adapter.server.authn import Authenticator, merge_settings
from adapter.server.authz import Authorizer
from adapter.server.context import Groups, ServerContext
from adapter.server.options import ServingOptions
from adapter.server.routes import Services, build_app, make_runner
from kubecommon.serving import CertFiles, DynamicServingContext, ensure_self_signed, service_dns_names
from adapter.server.telemetry import StateSource, Telemetry

__all__ = ["main", "serve"]

_log = logging.getLogger("adapter")


class StartupError(Exception):
    """The adapter cannot start; the message says why and what to change."""


def _configure_logging(verbosity: int) -> None:
    logging.basicConfig(level=logging.DEBUG if verbosity >= 4 else logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname).1s %(name)s] %(message)s")
    if verbosity < 6:
        logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


def main(argv: list[str]) -> int:
    try:
        options = parse(argv)
    except OptionsError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    _configure_logging(options.verbosity)
    try:
        compiled, rules_sha256 = load_rule_file(str(options.config))
    except ConfigError as err:
        log_refused_at_start(err)
        return 1
    freeze_heap()
    try:
        # uvloop's libuv loop roughly halves the per-request cost of the event loop and TLS
        # plumbing, which is most of what the adapter adds over Prometheus' own latency.
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(serve(options, compiled, rules_sha256=rules_sha256))
    except StartupError as err:
        _log.error("cannot start: %s", err)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


def _version_info() -> dict[str, str]:
    try:
        version = metadata.version("prom-autoscaler")
    except metadata.PackageNotFoundError:
        version = "0.0.0"
    major, _, rest = version.partition(".")
    return {"major": major, "minor": rest.partition(".")[0], "gitVersion": f"v{version}",
            "gitCommit": "", "gitTreeState": "", "buildDate": "",
            "goVersion": f"python{platform.python_version()}", "compiler": platform.python_implementation().lower(),
            "platform": f"{sys.platform}/{platform.machine()}"}


def _kube_config(path: str | None) -> KubeConfig:
    try:
        return load_kube_config(path) if path else in_cluster_config(os.environ)
    except KubeConfigError as err:
        raise StartupError(str(err)) from None


def _serving_files(flags: ServingOptions) -> CertFiles:
    if flags.tls_cert_file and flags.tls_key_file:
        return CertFiles(cert_file=flags.tls_cert_file, key_file=flags.tls_key_file)
    ips = [flags.bind_address] if flags.bind_address not in ("0.0.0.0", "::", "") else []
    return ensure_self_signed(flags.cert_dir, ip_addresses=ips,
                              dns_names=service_dns_names(flags.service_name, flags.service_namespace))


class _Clients:
    """Kubernetes clients by kubeconfig path, so identical configs share one session."""

    def __init__(self) -> None:
        self._by_path: dict[str | None, KubeClient] = {}

    async def get(self, path: str | None) -> KubeClient:
        if path not in self._by_path:
            client = KubeClient(_kube_config(path))
            try:
                await client.start()
            except (ssl.SSLError, OSError, ValueError) as err:
                raise StartupError(f"kubeconfig {path or 'in-cluster'}: unusable TLS material: {err}") from None
            self._by_path[path] = client
        return self._by_path[path]

    async def close(self) -> None:
        for client in self._by_path.values():
            await client.close()


def _relist_state(discovery: Discovery) -> Callable[[], Mapping[str, float | None]]:
    return discovery.state_metrics


def _registry_state(discovery: Discovery) -> Callable[[], Mapping[str, float]]:
    def read() -> Mapping[str, float]:
        snapshot = discovery.snapshot
        return {"custom": len(snapshot.custom_metrics()), "external": len(snapshot.external_metrics()),
                "series": float(snapshot.series_count)}
    return read


async def _security(flags: ServingOptions, clients: _Clients, serving: DynamicServingContext,
                    stack: contextlib.AsyncExitStack) -> tuple[Authenticator | None, Authorizer | None]:
    if flags.insecure_disable_auth:
        _log.warning("!!! --insecure-disable-auth: EVERY request is served WITHOUT authentication or "
                     "authorization. Never use this outside a development machine. !!!")
        return None, None
    authn_client = await clients.get(flags.authentication_kubeconfig)
    authz_client = await clients.get(flags.authorization_kubeconfig)
    tokens = TokenReviewer(authn_client, ttl=flags.token_cache_ttl, max_entries=flags.review_cache_size)
    access = SubjectAccessReviewer(authz_client, allowed_ttl=flags.authorized_ttl,
                                   denied_ttl=flags.unauthorized_ttl, max_entries=flags.review_cache_size)
    authenticator = Authenticator(merge_settings(flags.authn_flags, None), tokens)

    def apply(cluster: AuthMaterial | None) -> None:
        settings = merge_settings(flags.authn_flags, cluster)
        authenticator.settings = settings
        serving.set_client_ca(settings.trusted_ca_bundle())

    apply(None)
    if not flags.skip_lookup:
        watcher = AuthConfigWatcher(authn_client, apply)
        try:
            await watcher.start()
        except KubeError as err:
            raise StartupError(f"cannot read kube-system/extension-apiserver-authentication: {err} "
                               "(grant the extension-apiserver-authentication-reader Role, or pass "
                               "--authentication-skip-lookup with --client-ca-file/--requestheader-*)") from None
        stack.push_async_callback(watcher.stop)
    if authenticator.settings.requestheader is None:
        _log.warning("no requestheader CA known: requests proxied by kube-apiserver will be anonymous")
    return authenticator, Authorizer(access, always_allow_paths=flags.always_allow_paths)


def _services(compiled: CompiledConfig, discovery: Discovery, prometheus: PrometheusAPI,
              caches: KubeObjectCaches, telemetry: Telemetry) -> Services:
    from adapter.services.custom_metrics import CustomMetricsService
    from adapter.services.external_metrics import ExternalMetricsService
    from adapter.services.resource_metrics import ResourceMetricsService

    resource = None
    if compiled.resource is not None:
        resource = ResourceMetricsService(rules=compiled.resource, prometheus=prometheus, objects=caches,
                                          clock=time.time, dropped=telemetry.drop_sample)

    def registry() -> Registry:
        return discovery.snapshot

    return Services(custom=CustomMetricsService(registry=registry, prometheus=prometheus, objects=caches,
                                                dropped=telemetry.drop_sample, missing=discovery.missing.custom),
                    external=ExternalMetricsService(registry=registry, prometheus=prometheus,
                                                    dropped=telemetry.drop_sample,
                                                    missing=discovery.missing.external),
                    resource=resource)


async def _metrics_backend(options: ServeOptions, compiled: CompiledConfig, telemetry: Telemetry,
                           stack: contextlib.AsyncExitStack) -> tuple[InstrumentedPrometheus, Discovery]:
    raw = PrometheusClient(options.prometheus)
    try:
        await raw.start()
    except (ssl.SSLError, OSError, ValueError) as err:
        raise StartupError(f"Prometheus client: {err}") from None
    stack.push_async_callback(raw.close)
    prometheus = InstrumentedPrometheus(raw, telemetry)
    discovery = Discovery(prometheus, compiled, interval=options.discovery.relist_interval,
                          max_age=options.discovery.effective_max_age, clock=time.time)
    await discovery.start()  # the first relist is attempted; failing it only delays readiness
    stack.push_async_callback(discovery.stop)
    return prometheus, discovery


async def _listen(app: web.Application, flags: ServingOptions, serving: DynamicServingContext,
                  stack: contextlib.AsyncExitStack) -> None:
    runner = make_runner(app)
    await runner.setup()
    stack.push_async_callback(runner.cleanup)
    site = web.TCPSite(runner, flags.bind_address, flags.secure_port, ssl_context=serving.listener,
                       reuse_address=True)
    try:
        await site.start()
    except OSError as err:
        raise StartupError(f"cannot listen on {flags.bind_address}:{flags.secure_port}: {err.strerror}") from None
    reloader = asyncio.create_task(serving.watch_files(flags.tls_reload_interval))
    stack.callback(reloader.cancel)
    _log.info("serving securely on %s:%d", flags.bind_address, flags.secure_port)


def _live_reload(options: ServeOptions, rules_sha256: str, discovery: Discovery, services: Services,
                 stack: contextlib.AsyncExitStack) -> RuleReloader:
    """Watch the rule file: new rules reach discovery (swapped in with its next relist, started
    at once) and the resource-metrics service; adding or removing resourceRules is refused."""
    async def apply(compiled: CompiledConfig) -> None:
        if (compiled.resource is None) != (services.resource is None):
            raise ReloadRefused("adding or removing resourceRules changes the served API groups: restart the "
                                "adapter to apply it")
        if services.resource is not None and compiled.resource is not None:
            services.resource.use_rules(compiled.resource)
        await discovery.use_rules(compiled)

    reloader = RuleReloader(str(options.config), loaded_sha256=rules_sha256, apply=apply,
                            interval=options.config_reload_interval, clock=time.time)
    if options.config_reload_interval > 0:
        task = asyncio.create_task(reloader.run(), name="rule-file-reload")
        stack.callback(task.cancel)
    return reloader


async def _overrides_served(compiled: CompiledConfig, resolver: ResourceResolver) -> None:
    """Refuse rules whose overrides name resources the cluster does not serve (upstream's start-up
    RESTMapper check); an API server that cannot answer now is no verdict on the rules."""
    try:
        await check_overrides_served(compiled, resolver.resolve)
    except OverrideNotServed as err:
        raise StartupError(str(err)) from None
    except KubeError as err:
        _log.warning("could not check the rules' overrides against API discovery: %s", err)


async def serve(options: ServeOptions, compiled: CompiledConfig, *,
                stop: asyncio.Event | None = None, rules_sha256: str = "") -> None:
    """Run until `stop` is set or SIGTERM/SIGINT arrives; close everything in reverse order."""
    stop = stop or asyncio.Event()
    flags = options.serving
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    telemetry = Telemetry()
    try:
        serving = DynamicServingContext(_serving_files(flags), min_version=flags.tls_min_version,
                                        request_client_certs=not flags.insecure_disable_auth)
    except (OSError, ValueError) as err:
        raise StartupError(f"serving certificate: {err}") from None
    async with contextlib.AsyncExitStack() as stack:
        clients = _Clients()
        stack.push_async_callback(clients.close)
        authenticator, authorizer = await _security(flags, clients, serving, stack)
        lister = await clients.get(options.kubeconfig)
        resolver = ResourceResolver(lister)
        await _overrides_served(compiled, resolver)
        caches = KubeObjectCaches(lister, resolver, sync_timeout=options.cache_sync_timeout)
        stack.push_async_callback(caches.stop)
        caches.prewarm(("", "pods"), ("", "nodes"))
        prometheus, discovery = await _metrics_backend(options, compiled, telemetry, stack)
        services = _services(compiled, discovery, prometheus, caches, telemetry)
        reloader = _live_reload(options, rules_sha256, discovery, services, stack)
        telemetry.add_state(StateSource(relist=_relist_state(discovery), registry=_registry_state(discovery),
                                        caches=caches.sizes, rules=reloader.state))
        ctx = ServerContext(
            telemetry=telemetry, authenticator=authenticator, authorizer=authorizer,
            anonymous=flags.anonymous_auth, groups=Groups(resource=compiled.resource is not None),
            registry=lambda: discovery.snapshot,
            readiness={"metric-discovery": discovery.freshness,
                       "shutdown": lambda: (not stop.is_set(), "shutting down")},
            version=_version_info(), max_inflight=flags.max_inflight)
        app = build_app(ctx, services)
        await _listen(app, flags, serving, stack)
        await stop.wait()
        if flags.shutdown_delay > 0:
            # Like kube-apiserver's --shutdown-delay-duration: /readyz fails at once, requests are
            # still served while endpoints and load balancers stop sending new ones.
            _log.info("shutdown requested: not ready, serving for %gs more", flags.shutdown_delay)
            await asyncio.sleep(flags.shutdown_delay)
        _log.info("shutting down")
