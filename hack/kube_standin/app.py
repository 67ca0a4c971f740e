"""Composition root: build the state, create the bootstrap objects, serve HTTPS, write the
kubeconfig and print `ready`.

Non-goals: persistence across restarts (every start is a fresh cluster with fresh certificates).
"""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from aiohttp import web

from kubecommon import tls

from . import bootstrap, pki as pki_mod
from .aggregator import Aggregator
from .authn import Authenticator
from .controllers import Controllers
from .objects import ObjectApi
from .pki import ADMIN_USER, FRONT_PROXY_CLIENT
from .rbac import Authorizer, UserInfo
from .registry import TypeRegistry
from .server import build_app
from .state import Options, State
from .store import Store

log = logging.getLogger("kube_standin")


def _authorizer(store: Store) -> Authorizer:
    rbac = "rbac.authorization.k8s.io"
    return Authorizer(
        cluster_role_bindings=lambda: store.objects((rbac, "clusterrolebindings")),
        role_bindings=lambda ns: store.objects((rbac, "rolebindings"), ns),
        cluster_role=lambda name: store.get((rbac, "clusterroles"), ("", name)),
        role=lambda ns, name: store.get((rbac, "roles"), (ns, name)),
    )


def build_state(options: Options, pki: pki_mod.Pki) -> State:
    store = Store(log_size=options.watch_cache_size)
    types = TypeRegistry()
    api = ObjectApi(store, types, clock=lambda: dt.datetime.now(dt.timezone.utc))

    def sa_uid(ns: str, name: str) -> str | None:
        sa = store.get(("", "serviceaccounts"), (ns, name))
        return sa["metadata"]["uid"] if sa else None

    admin = UserInfo(name=ADMIN_USER, groups=("system:masters", "kubeadm:cluster-admins"))
    authn = Authenticator(static_tokens={pki.admin_token: admin}, service_account_uid=sa_uid,
                          clock=time.time)
    return State(options=options, store=store, types=types, api=api, authn=authn,
                 authz=_authorizer(store), pki=pki)


def _create(state: State, obj: dict[str, Any]) -> None:
    rt = state.types.by_kind(obj["apiVersion"], obj["kind"])
    assert rt is not None, obj["kind"]
    state.api.create(rt, obj["metadata"].get("namespace", ""), obj)


def load_bootstrap(state: State, port: int) -> None:
    for ns in bootstrap.NAMESPACES:
        _create(state, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    objs = (bootstrap.cluster_roles() + bootstrap.cluster_role_bindings()
            + bootstrap.namespaced_objects() + bootstrap.local_apiservices()
            + bootstrap.kubernetes_service(port)
            + [bootstrap.node(f"standin-node-{i}") for i in range(state.options.nodes)])
    objs.append(bootstrap.authentication_configmap(
        client_ca=state.pki.ca.cert_pem, front_proxy_ca=state.pki.front_proxy_ca.cert_pem,
        allowed_names=[FRONT_PROXY_CLIENT]))
    for obj in objs:
        _create(state, obj)


async def serve(options: Options, *, stop: asyncio.Event | None = None) -> None:
    kubeconfig = Path(options.kubeconfig)
    pki = pki_mod.load_or_create(Path(options.data_dir))
    state = build_state(options, pki)
    controllers = Controllers(state)
    state.aggregator = Aggregator(state)
    simulator = None
    if options.simulate_workloads:
        from .simulator import Simulator
        simulator = Simulator(state, controllers)
    ssl_ctx = tls.server_ssl_context(pki.path("apiserver.crt"), pki.path("apiserver.key"),
                                     client_ca_pem=pki.ca.cert_pem)
    # A stand-in stops at once: open watches and keep-alive clients are cut after 1 s instead of
    # aiohttp's 60 s grace (kube-apiserver's own shutdown delay is for load balancers, not tests).
    runner = web.AppRunner(build_app(state), access_log=None, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", options.port, ssl_context=ssl_ctx, backlog=512)
    await site.start()
    port = runner.addresses[0][1]
    state.options = _with_port(options, port)
    load_bootstrap(state, port)
    await controllers.drain()
    await controllers.start()
    await state.aggregator.start()
    if simulator is not None:
        await simulator.start()
    pki_mod.write_kubeconfig(pki, f"https://127.0.0.1:{port}", kubeconfig)
    wall, cpu = startup_cost()
    print(f"serving on https://127.0.0.1:{port}", flush=True)
    print(f"startup: {wall:.3f} s wall since exec, {cpu:.3f} s cpu", flush=True)
    print("ready", flush=True)
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    state.store.close_watchers()
    await state.aggregator.stop()
    await controllers.stop()
    await runner.cleanup()


def startup_cost() -> tuple[float, float]:
    """(wall seconds since this process was exec'd, CPU seconds used), from /proc on Linux."""
    cpu = time.process_time()
    try:
        start_ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return uptime - start_ticks / os.sysconf("SC_CLK_TCK"), cpu
    except (OSError, ValueError, IndexError):
        return float("nan"), cpu


def _with_port(options: Options, port: int) -> Options:
    return dataclasses.replace(options, port=port)


def main(options: Options) -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    asyncio.run(serve(options))
    return 0
