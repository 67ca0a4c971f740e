"""Built-in controllers the clients of a cluster take for granted, driven by store events.

- namespace defaults: a `default` ServiceAccount and the `kube-root-ca.crt` ConfigMap in every
  namespace (serviceaccount and root-ca-cert-publisher controllers);
- CRD API registration: a local APIService per served CRD group-version, removed when no CRD
  serves it any more (kube-apiserver's crdRegistrationController).
Work is queued from the synchronous commit hook and done on the event loop, so a write never
re-enters the store from inside another write. Non-goals: resync, retries with backoff.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Callable

from kubecommon.status import StatusError

from . import bootstrap
from .state import State
from .store import Event

log = logging.getLogger("kube_standin.controllers")
Task = Callable[[], None]


class Controllers:
    def __init__(self, state: State) -> None:
        self._state = state
        self._queue: asyncio.Queue[Task] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        self._handlers: list[Callable[[tuple[str, str], Event], Task | None]] = [
            self._namespace_defaults, self._crd_registration]
        state.store.on_commit(self._on_commit)

    def add(self, handler: Callable[[tuple[str, str], Event], Task | None]) -> None:
        self._handlers.append(handler)

    def enqueue(self, task: Task) -> None:
        self._queue.put_nowait(task)

    def _on_commit(self, storage: tuple[str, str], event: Event) -> None:
        for handler in self._handlers:
            task = handler(storage, event)
            if task is not None:
                self._queue.put_nowait(task)

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run())

    async def stop(self) -> None:
        if self._task:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def drain(self) -> None:
        """Run every queued task now (used during bootstrap, before serving)."""
        while not self._queue.empty():
            self._run_one(self._queue.get_nowait())

    async def _run(self) -> None:
        while True:
            task = await self._queue.get()
            self._run_one(task)

    @staticmethod
    def _run_one(task: Task) -> None:
        try:
            task()
        except StatusError as e:
            log.debug("controller task skipped: %s", e)
        except Exception:
            log.exception("controller task failed")

    # --- handlers --------------------------------------------------------------------------

    def _namespace_defaults(self, storage: tuple[str, str], event: Event) -> Task | None:
        if storage != ("", "namespaces") or event.type != "ADDED":
            return None
        name = event.obj["metadata"]["name"]

        def task() -> None:
            state = self._state
            sa_t = state.types.lookup("", "v1", "serviceaccounts")
            cm_t = state.types.lookup("", "v1", "configmaps")
            assert sa_t and cm_t
            if state.store.get(("", "serviceaccounts"), (name, "default")) is None:
                state.api.create(sa_t, name, {"metadata": {"name": "default"}})
            if state.store.get(("", "configmaps"), (name, "kube-root-ca.crt")) is None:
                state.api.create(cm_t, name, {"metadata": {"name": "kube-root-ca.crt"},
                                              "data": {"ca.crt": state.pki.ca.cert_pem.decode()}})
        return task

    def _crd_registration(self, storage: tuple[str, str], event: Event) -> Task | None:
        if storage != ("apiextensions.k8s.io", "customresourcedefinitions"):
            return None

        def task() -> None:
            state = self._state
            rt = state.types.lookup("apiregistration.k8s.io", "v1", "apiservices")
            assert rt is not None
            wanted = {(t.group, t.version) for t in state.types.all() if t.crd}
            builtin = {(t.group, t.version) for t in state.types.all() if not t.crd}
            for svc in state.store.objects(rt.storage_key):
                spec = svc.get("spec") or {}
                gv = (spec.get("group", ""), spec.get("version", ""))
                managed = (svc["metadata"].get("labels") or {}).get(
                    "kube-aggregator.kubernetes.io/automanaged") == "true"
                if managed and gv not in wanted and gv not in builtin:
                    state.api.delete(rt, "", svc["metadata"]["name"])
            for group, version in sorted(wanted - builtin):
                name = f"{version}.{group}"
                if state.store.get(rt.storage_key, ("", name)) is None:
                    obj = bootstrap.local_apiservice(group, version, 1000, 100)
                    obj["metadata"]["labels"]["kube-aggregator.kubernetes.io/automanaged"] = "true"
                    state.api.create(rt, "", obj)
        return task
