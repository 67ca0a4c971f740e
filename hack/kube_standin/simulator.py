"""Workload simulator: the deployment, replicaset and statefulset controllers plus a kubelet
that runs every pod, so scaling has visible effects.

- Deployment -> one ReplicaSet per pod template (`<name>-<template hash>`, label
  `pod-template-hash`); the current one gets spec.replicas, older ones are scaled to 0.
- ReplicaSet -> pods `<rs>-<5 chars>`; StatefulSet -> pods `<sts>-<ordinal>`; surplus pods are
  deleted (not-ready and newest first; highest ordinals for StatefulSets).
- Pods: labels from the template, ownerReferences, container resources as declared, a node,
  phase Running with startTime and podIP, conditions with lastTransitionTime; Ready after the
  configured delay.
- Status of every workload: replicas, readyReplicas, availableReplicas, updatedReplicas,
  observedGeneration, the scale selector; Events like the real controllers' (ScalingReplicaSet,
  SuccessfulCreate, SuccessfulDelete).
Non-goals: rolling-update pacing (a new template replaces the old one at once), probes,
restarts, scheduling constraints, DaemonSets and Jobs.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
from typing import Any

from .controllers import Controllers, Task
from .objects import NAME_CHARS
from .resources import ResourceType
from .state import State
from .store import Event, Obj

DEPLOY, RS, STS, PODS = ("apps", "deployments"), ("apps", "replicasets"), ("apps", "statefulsets"), ("", "pods")


def template_hash(template: Any) -> str:
    digest = hashlib.sha256(json.dumps(template, sort_keys=True).encode()).digest()
    return "".join(NAME_CHARS[b % len(NAME_CHARS)] for b in digest[:10])


def _owner_ref(obj: Obj) -> dict[str, Any]:
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def _controller_uid(obj: Obj) -> str | None:
    for ref in obj["metadata"].get("ownerReferences") or []:
        if ref.get("controller"):
            uid: str | None = ref.get("uid")
            return uid
    return None


def _ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


class Simulator:
    def __init__(self, state: State, controllers: Controllers) -> None:
        self._state = state
        self._controllers = controllers
        self._pending: set[tuple[tuple[str, str], str, str]] = set()
        self._node = 0
        self._ip = 0
        controllers.add(self._on_event)

    async def start(self) -> None:
        for storage in (DEPLOY, RS, STS):
            for obj in self._state.store.objects(storage):
                self._queue(storage, obj["metadata"]["namespace"], obj["metadata"]["name"])

    def _rt(self, storage: tuple[str, str]) -> ResourceType:
        rt = self._state.types.types_for_storage(storage)[0]
        return rt

    # --- event routing ---------------------------------------------------------------------

    def _on_event(self, storage: tuple[str, str], event: Event) -> Task | None:
        meta = event.obj["metadata"]
        if storage in (DEPLOY, RS, STS) and event.type != "DELETED":
            self._queue(storage, meta["namespace"], meta["name"])
        if storage in (RS, STS, PODS):
            for ref in meta.get("ownerReferences") or []:
                owner = {"Deployment": DEPLOY, "ReplicaSet": RS, "StatefulSet": STS}.get(ref.get("kind"))
                if owner and ref.get("controller"):
                    self._queue(owner, meta["namespace"], ref["name"])
        return None

    def _queue(self, storage: tuple[str, str], namespace: str, name: str) -> None:
        key = (storage, namespace, name)
        if key in self._pending:
            return
        self._pending.add(key)

        def task() -> None:
            self._pending.discard(key)
            self._sync(storage, namespace, name)
        self._controllers.enqueue(task)

    def _sync(self, storage: tuple[str, str], namespace: str, name: str) -> None:
        obj = self._state.store.get(storage, (namespace, name))
        if obj is None or obj["metadata"].get("deletionTimestamp"):
            return
        if storage == DEPLOY:
            self._sync_deployment(obj)
        elif storage == RS:
            self._sync_pods(RS, obj, ordinal=False)
        else:
            self._sync_pods(STS, obj, ordinal=True)

    # --- deployments -----------------------------------------------------------------------

    def _sync_deployment(self, dep: Obj) -> None:
        api, ns = self._state.api, dep["metadata"]["namespace"]
        spec = dep.get("spec") or {}
        template = copy.deepcopy(spec.get("template") or {})
        h = template_hash(template)
        template.setdefault("metadata", {}).setdefault("labels", {})["pod-template-hash"] = h
        owned = [rs for rs in self._state.store.objects(RS, ns)
                 if _controller_uid(rs) == dep["metadata"]["uid"]]
        rs_name = f"{dep['metadata']['name']}-{h}"
        replicas = int(spec.get("replicas", 1))
        current = next((rs for rs in owned if rs["metadata"]["name"] == rs_name), None)
        rs_t = self._rt(RS)
        if current is None:
            selector = copy.deepcopy(spec.get("selector") or {})
            selector.setdefault("matchLabels", {})["pod-template-hash"] = h
            current = api.create(rs_t, ns, {
                "metadata": {"name": rs_name, "labels": template["metadata"]["labels"],
                             "annotations": {"deployment.kubernetes.io/revision": str(len(owned) + 1)},
                             "ownerReferences": [_owner_ref(dep)]},
                "spec": {"replicas": replicas, "selector": selector, "template": template}})
            self._event(dep, "ScalingReplicaSet", f"Scaled up replica set {rs_name} to {replicas}")
        elif int(current["spec"].get("replicas", 0)) != replicas:
            old = int(current["spec"].get("replicas", 0))
            new = copy.deepcopy(current)
            new["spec"]["replicas"] = replicas
            current = api.update(rs_t, ns, rs_name, new)
            verb = "up" if replicas > old else "down"
            self._event(dep, "ScalingReplicaSet",
                        f"Scaled {verb} replica set {rs_name} from {old} to {replicas}")
        for rs in owned:
            if rs["metadata"]["name"] != rs_name and int(rs["spec"].get("replicas", 0)) != 0:
                new = copy.deepcopy(rs)
                new["spec"]["replicas"] = 0
                api.update(rs_t, ns, rs["metadata"]["name"], new)
        self._deployment_status(dep, current, owned)

    def _deployment_status(self, dep: Obj, current: Obj, owned: list[Obj]) -> None:
        all_rs = {rs["metadata"]["name"]: rs for rs in owned}
        all_rs[current["metadata"]["name"]] = current
        total = sum(int((rs.get("status") or {}).get("replicas", 0)) for rs in all_rs.values())
        ready = sum(int((rs.get("status") or {}).get("readyReplicas", 0)) for rs in all_rs.values())
        updated = int((current.get("status") or {}).get("replicas", 0))
        desired = int(dep["spec"].get("replicas", 1))
        status: dict[str, Any] = {"observedGeneration": dep["metadata"].get("generation", 1),
                                  "replicas": total, "updatedReplicas": updated,
                                  "readyReplicas": ready, "availableReplicas": ready}
        if desired - ready > 0:
            status["unavailableReplicas"] = desired - ready
        status = {k: v for k, v in status.items() if v or k == "observedGeneration"}
        available = ready >= desired
        status["conditions"] = self._conditions(dep, [
            ("Available", available, "MinimumReplicasAvailable" if available else
             "MinimumReplicasUnavailable", "Deployment has minimum availability." if available
             else "Deployment does not have minimum availability."),
            ("Progressing", True, "NewReplicaSetAvailable" if updated == desired and available
             else "ReplicaSetUpdated",
             f'ReplicaSet "{current["metadata"]["name"]}" has successfully progressed.')])
        self._write_status(DEPLOY, dep, status)

    # --- replicasets and statefulsets -------------------------------------------------------

    def _sync_pods(self, storage: tuple[str, str], owner: Obj, *, ordinal: bool) -> None:
        ns, name = owner["metadata"]["namespace"], owner["metadata"]["name"]
        spec = owner.get("spec") or {}
        desired = int(spec.get("replicas", 1))
        pods = [p for p in self._state.store.objects(PODS, ns)
                if _controller_uid(p) == owner["metadata"]["uid"]
                and not p["metadata"].get("deletionTimestamp")]
        pod_t = self._rt(PODS)
        if ordinal:
            by_name = {p["metadata"]["name"]: p for p in pods}
            for i in range(desired):
                if f"{name}-{i}" not in by_name:
                    pods.append(self._create_pod(owner, f"{name}-{i}", {
                        "statefulset.kubernetes.io/pod-name": f"{name}-{i}",
                        "apps.kubernetes.io/pod-index": str(i)}))
            surplus = [p for p in pods if _ordinal(p, name) >= desired]
        else:
            while len(pods) < desired:
                pods.append(self._create_pod(owner, f"{name}-{self._state.api.random_suffix()}", {}))
            pods.sort(key=lambda p: (_ready(p), p["metadata"]["creationTimestamp"],
                                     p["metadata"]["name"]), reverse=True)
            surplus = pods[desired:] if len(pods) > desired else []
        for pod in surplus:
            self._state.api.delete(pod_t, ns, pod["metadata"]["name"])
            self._event(owner, "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}")
        alive = [p for p in pods if p not in surplus]
        ready = sum(1 for p in alive if _ready(p))
        status: dict[str, Any] = {"observedGeneration": owner["metadata"].get("generation", 1),
                                  "replicas": len(alive), "readyReplicas": ready,
                                  "availableReplicas": ready}
        if ordinal:
            status.update(currentReplicas=len(alive), updatedReplicas=len(alive))
        else:
            status["fullyLabeledReplicas"] = len(alive)
        status = {k: v for k, v in status.items() if v or k in ("observedGeneration", "replicas")}
        self._write_status(storage, owner, status)

    def _create_pod(self, owner: Obj, pod_name: str, extra_labels: dict[str, str]) -> Obj:
        template = copy.deepcopy((owner.get("spec") or {}).get("template") or {})
        meta = template.get("metadata") or {}
        labels = dict(meta.get("labels") or {}, **extra_labels)
        spec = template.get("spec") or {"containers": []}
        nodes = self._state.store.objects(("", "nodes"))
        if nodes:
            spec["nodeName"] = nodes[self._node % len(nodes)]["metadata"]["name"]
            self._node += 1
        self._ip += 1
        now = self._state.api.now()
        pod = {"metadata": {"name": pod_name, "labels": labels,
                            "annotations": meta.get("annotations") or {},
                            "ownerReferences": [_owner_ref(owner)]},
               "spec": spec,
               "status": {"phase": "Running", "startTime": now, "hostIP": "127.0.0.1",
                          "podIP": f"10.244.{self._ip // 250 % 250}.{self._ip % 250 + 1}",
                          "qosClass": "Burstable",
                          "conditions": [_cond(t, s, now) for t, s in (
                              ("PodScheduled", True), ("Initialized", True),
                              ("ContainersReady", False), ("Ready", False))],
                          "containerStatuses": [_container_status(c, False, now)
                                                for c in spec.get("containers") or []]}}
        if not pod["metadata"]["annotations"]:
            del pod["metadata"]["annotations"]
        created = self._state.api.create(self._rt(PODS), owner["metadata"]["namespace"], pod)
        self._event(owner, "SuccessfulCreate", f"Created pod: {pod_name}")
        loop = asyncio.get_running_loop()
        ns = owner["metadata"]["namespace"]
        loop.call_later(self._state.options.ready_delay, self._controllers.enqueue,
                        lambda: self._make_ready(ns, pod_name, created["metadata"]["uid"]))
        return created

    def _make_ready(self, namespace: str, name: str, uid: str) -> None:
        pod = self._state.store.get(PODS, (namespace, name))
        if pod is None or pod["metadata"]["uid"] != uid or _ready(pod):
            return
        now = self._state.api.now()
        status = copy.deepcopy(pod["status"])
        status["conditions"] = [_cond(c["type"], True, now) if c["type"] in (
            "ContainersReady", "Ready") else c for c in status["conditions"]]
        status["containerStatuses"] = [_container_status(c, True, now)
                                       for c in pod["spec"].get("containers") or []]
        self._write_status(PODS, pod, status)

    # --- helpers ---------------------------------------------------------------------------

    def _write_status(self, storage: tuple[str, str], obj: Obj, status: dict[str, Any]) -> None:
        if obj.get("status") == status:
            return
        new = copy.deepcopy(obj)
        new["status"] = status
        self._state.api.update(self._rt(storage), obj["metadata"]["namespace"],
                               obj["metadata"]["name"], new, subresource="status")

    def _conditions(self, obj: Obj, wanted: list[tuple[str, bool, str, str]]) -> list[dict[str, Any]]:
        old = {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}
        now = self._state.api.now()
        out = []
        for ctype, ok, reason, message in wanted:
            status = "True" if ok else "False"
            prev: dict[str, Any] = old.get(ctype) or {}
            same = bool(prev) and prev.get("status") == status
            out.append({"type": ctype, "status": status, "reason": reason, "message": message,
                        "lastUpdateTime": prev["lastUpdateTime"] if same and prev.get("reason") == reason else now,
                        "lastTransitionTime": prev["lastTransitionTime"] if same else now})
        return out

    def _event(self, obj: Obj, reason: str, message: str) -> None:
        meta = obj["metadata"]
        ev_t = self._state.types.lookup("", "v1", "events")
        assert ev_t is not None
        now = self._state.api.now()
        component = {"Deployment": "deployment-controller", "ReplicaSet": "replicaset-controller",
                     "StatefulSet": "statefulset-controller"}.get(obj["kind"], "standin")
        self._state.api.create(ev_t, meta["namespace"], {
            "metadata": {"generateName": f"{meta['name']}.", "namespace": meta["namespace"]},
            "involvedObject": {"apiVersion": obj["apiVersion"], "kind": obj["kind"],
                               "name": meta["name"], "namespace": meta["namespace"],
                               "uid": meta["uid"], "resourceVersion": meta.get("resourceVersion")},
            "reason": reason, "message": message, "type": "Normal",
            "source": {"component": component}, "firstTimestamp": now, "lastTimestamp": now,
            "count": 1, "reportingComponent": component, "reportingInstance": ""})


def _ordinal(pod: Obj, owner: str) -> int:
    suffix = pod["metadata"]["name"][len(owner) + 1:]
    return int(suffix) if suffix.isdigit() else 10 ** 9


def _cond(ctype: str, ok: bool, now: str) -> dict[str, Any]:
    return {"type": ctype, "status": "True" if ok else "False", "lastProbeTime": None,
            "lastTransitionTime": now}


def _container_status(container: Obj, ready: bool, now: str) -> dict[str, Any]:
    return {"name": container.get("name", ""), "image": container.get("image", ""),
            "imageID": f"docker.io/library/{container.get('image', '')}@sha256:standin",
            "containerID": f"standin://{container.get('name', '')}", "ready": ready,
            "started": True, "restartCount": 0,
            "state": {"running": {"startedAt": now}}}
