"""Object lifecycle semantics of kube-apiserver's generic registry, over the in-memory store.

create / update / delete with: generateName, uid, creationTimestamp, resourceVersion
preconditions (409 Conflict on stale writes), no-op updates that do not bump the version,
generation that moves only on spec changes, the status subresource split, finalizers and
deletionTimestamp, namespace lifecycle (404 for a missing namespace, 403 while terminating,
contents removed on delete), and background/orphan garbage collection by ownerReferences.
Non-goals: admission plugins, managedFields, graceful pod termination (deletes are immediate).
"""

from __future__ import annotations

import copy
import datetime as dt
import ipaddress
import random
import uuid
from typing import Any, Callable

from kubecommon.status import AlreadyExists, BadRequest, Conflict, Forbidden, NotFound

from .registry import TypeRegistry
from .resources import ResourceType
from .store import Event, Key, Obj, Store
from . import openapi_defs, strategies

# k8s.io/apimachinery utilrand alphabet: no vowels, no look-alike digits.
NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789"
_CONFLICT = "the object has been modified; please apply your changes to the latest version and try again"


def timestamp(now: dt.datetime) -> str:
    return now.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _spec_part(obj: Obj) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}


def _tracks_generation(rt: ResourceType) -> bool:
    return rt.status or rt.crd


class ObjectApi:
    def __init__(self, store: Store, types: TypeRegistry, *,
                 clock: Callable[[], dt.datetime], seed: int | None = None) -> None:
        self.store = store
        self.types = types
        self._clock = clock
        self._random = random.Random(seed)
        self._next_ip = int(ipaddress.ip_address("10.96.0.10"))
        self._dependents: dict[str, set[tuple[tuple[str, str], Key]]] = {}
        store.on_commit(self._index_owners)

    def now(self) -> str:
        return timestamp(self._clock())

    def random_suffix(self, n: int = 5) -> str:
        return "".join(self._random.choice(NAME_CHARS) for _ in range(n))

    def _allocate_ip(self) -> str:
        self._next_ip += 1
        return str(ipaddress.ip_address(self._next_ip))

    # --- reads -----------------------------------------------------------------------------

    def get(self, rt: ResourceType, namespace: str, name: str) -> Obj:
        obj = self.store.get(rt.storage_key, (namespace if rt.namespaced else "", name))
        if obj is None:
            raise NotFound.for_object(rt.plural, rt.group, name)
        return obj

    def require_namespace(self, namespace: str, *, creating: bool = False, name: str = "",
                          rt: ResourceType | None = None) -> None:
        ns = self.store.get(("", "namespaces"), ("", namespace))
        if ns is None:
            raise NotFound.for_object("namespaces", "", namespace)
        if creating and rt is not None and (ns.get("status") or {}).get("phase") == "Terminating":
            raise Forbidden(f'{rt.plural} "{name}" is forbidden: unable to create new content in '
                            f'namespace {namespace} because it is being terminated',
                            details={"name": name, "kind": rt.plural, "group": rt.group,
                                     "causes": [{"reason": "NamespaceTerminating",
                                                 "message": namespace,
                                                 "field": "metadata.namespace"}]})

    # --- writes ----------------------------------------------------------------------------

    def create(self, rt: ResourceType, namespace: str, body: Obj, *, dry_run: bool = False,
               owned: bool = False, field_validation: str = "") -> Obj:
        """Create from `body`; `owned=True` means the caller hands the dict over (no copy).
        `field_validation="Strict"` rejects fields the type does not declare (400)."""
        obj = body if owned else copy.deepcopy(body)
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise BadRequest("metadata must be an object")
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + self.random_suffix()
        name = meta.get("name", "")
        self._check_kind(rt, obj)
        if rt.namespaced:
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise BadRequest("the namespace of the provided object does not match the "
                                 "namespace sent on the request")
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        causes = strategies.validate_name(rt, name)
        if causes:
            raise strategies.invalid(rt, name, causes)
        if rt.namespaced:
            self.require_namespace(namespace, creating=True, name=name, rt=rt)
        key = (namespace if rt.namespaced else "", name)
        if self.store.get(rt.storage_key, key) is not None:
            raise AlreadyExists.for_object(rt.plural, rt.group, name)
        for field in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds",
                      "selfLink", "managedFields"):
            meta.pop(field, None)
        meta["uid"] = str(uuid.UUID(int=self._random.getrandbits(128), version=4))
        meta["creationTimestamp"] = self.now()
        if _tracks_generation(rt):
            meta["generation"] = 1
        strategies.apply_defaults(rt, obj, allocate_ip=self._allocate_ip, creating=True)
        self._validate(rt, obj, field_validation)
        if (rt.group, rt.plural) == ("apiextensions.k8s.io", "customresourcedefinitions"):
            _establish_crd(obj, self.now())
        if dry_run:
            return obj
        return self._commit(rt, key, obj)

    def update(self, rt: ResourceType, namespace: str, name: str, body: Obj, *,
               subresource: str = "", dry_run: bool = False, owned: bool = False,
               field_validation: str = "") -> Obj:
        key = (namespace if rt.namespaced else "", name)
        old = self.store.get(rt.storage_key, key)
        if old is None:
            raise NotFound.for_object(rt.plural, rt.group, name)
        obj = body if owned else copy.deepcopy(body)
        self._check_kind(rt, obj)
        meta = obj.setdefault("metadata", {})
        if meta.get("name", name) != name:
            raise BadRequest(f"the name of the object ({meta.get('name')}) does not match the "
                             f"name on the URL ({name})")
        if rt.namespaced and meta.get("namespace", namespace) != namespace:
            raise BadRequest("the namespace of the provided object does not match the namespace "
                             "sent on the request")
        wanted_rv = meta.get("resourceVersion")
        if wanted_rv and str(wanted_rv) != old["metadata"]["resourceVersion"]:
            raise Conflict.for_object(rt.plural, rt.group, name, _CONFLICT)
        if meta.get("uid") and meta["uid"] != old["metadata"]["uid"]:
            raise Conflict.for_object(rt.plural, rt.group, name,
                                      "Precondition failed: UID in precondition does not match")
        obj = self._merge_for_subresource(rt, old, obj, subresource)
        return self._finish_update(rt, key, old, obj, dry_run=dry_run,
                                   field_validation=field_validation)

    def _merge_for_subresource(self, rt: ResourceType, old: Obj, obj: Obj, sub: str) -> Obj:
        if sub == "status":
            merged = copy.deepcopy(old)
            merged["status"] = obj.get("status")
            if merged["status"] is None:
                merged.pop("status")
            return merged
        meta = obj["metadata"]
        for field in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                      "generation", "namespace", "name"):
            if field in old["metadata"]:
                meta[field] = old["metadata"][field]
            else:
                meta.pop(field, None)
        if rt.status and "status" in old:
            obj["status"] = copy.deepcopy(old["status"])
        elif rt.status:
            obj.pop("status", None)
        strategies.apply_defaults(rt, obj, allocate_ip=self._allocate_ip, creating=False)
        if (rt.group, rt.plural) == ("apiextensions.k8s.io", "customresourcedefinitions"):
            obj["status"] = copy.deepcopy(old.get("status") or {})
        return obj

    def _finish_update(self, rt: ResourceType, key: Key, old: Obj, obj: Obj, *,
                       dry_run: bool, field_validation: str = "") -> Obj:
        self._validate(rt, obj, field_validation)
        meta = obj["metadata"]
        meta["resourceVersion"] = old["metadata"]["resourceVersion"]
        if _tracks_generation(rt) and _spec_part(obj) != _spec_part(old):
            meta["generation"] = int(old["metadata"].get("generation", 1)) + 1
        if obj == old or dry_run:
            return old if obj == old else obj
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self._remove(rt, key, obj)
            return obj
        return self._commit(rt, key, obj)

    def delete(self, rt: ResourceType, namespace: str, name: str, *,
               options: dict[str, Any] | None = None, dry_run: bool = False) -> tuple[Obj, bool]:
        """Delete; return (object, gone). Not gone when finalizers keep it (deletionTimestamp set)."""
        options = options or {}
        key = (namespace if rt.namespaced else "", name)
        old = self.get(rt, namespace, name)
        pre = options.get("preconditions") or {}
        if pre.get("uid") and pre["uid"] != old["metadata"]["uid"]:
            raise Conflict.for_object(rt.plural, rt.group, name, "Precondition failed: UID in "
                                      f"precondition: {pre['uid']}, UID in object meta: "
                                      f"{old['metadata']['uid']}")
        if pre.get("resourceVersion") and pre["resourceVersion"] != old["metadata"]["resourceVersion"]:
            raise Conflict.for_object(rt.plural, rt.group, name, _CONFLICT)
        if dry_run:
            return old, True
        finalizers = list(old["metadata"].get("finalizers") or [])
        if rt.storage_key == ("", "namespaces"):
            finalizers = []  # the namespace controller's work happens synchronously below
        if finalizers:
            if old["metadata"].get("deletionTimestamp"):
                return old, False
            obj = copy.deepcopy(old)
            obj["metadata"]["deletionTimestamp"] = self.now()
            obj["metadata"]["deletionGracePeriodSeconds"] = 0
            return self._commit(rt, key, obj), False
        if rt.storage_key == ("", "namespaces"):
            self._empty_namespace(rt, key, old)
        final = copy.deepcopy(old)
        self._remove(rt, key, final)
        self._collect_dependents(old["metadata"]["uid"], options.get("propagationPolicy"))
        if (rt.group, rt.plural) == ("apiextensions.k8s.io", "customresourcedefinitions"):
            self._drop_custom_resources(old)
        return final, True

    # --- internals -------------------------------------------------------------------------

    def _check_kind(self, rt: ResourceType, obj: Obj) -> None:
        kind, api_version = obj.get("kind"), obj.get("apiVersion")
        if kind and kind != rt.kind:
            raise BadRequest(f"the API version in the data ({api_version}) does not match the "
                             f"expected API version ({rt.api_version})" if api_version != rt.api_version
                             else f"the kind in the data ({kind}) does not match the expected "
                                  f"kind ({rt.kind})")
        obj["kind"] = rt.kind
        obj["apiVersion"] = rt.api_version

    def _validate(self, rt: ResourceType, obj: Obj, field_validation: str = "") -> None:
        unknown = strategies.admit_custom(rt, obj) if rt.crd else (
            openapi_defs.unknown_fields(obj, rt) if field_validation == "Strict" else [])
        if unknown and field_validation == "Strict":
            raise strategies.strict_decoding_error(rt, unknown)
        causes = strategies.validate(rt, obj)
        if causes:
            raise strategies.invalid(rt, obj["metadata"].get("name", ""), causes)

    def _commit(self, rt: ResourceType, key: Key, obj: Obj) -> Obj:
        rv = self.store.next_rv()
        obj["metadata"]["resourceVersion"] = str(rv)
        self.store.put(rt.storage_key, key, obj, rv=rv)
        if (rt.group, rt.plural) == ("apiextensions.k8s.io", "customresourcedefinitions"):
            self.types.set_crds(self.store.objects(rt.storage_key))
        return obj

    def _remove(self, rt: ResourceType, key: Key, final: Obj) -> None:
        rv = self.store.next_rv()
        final["metadata"]["resourceVersion"] = str(rv)
        self.store.remove(rt.storage_key, key, final=final, rv=rv)
        if (rt.group, rt.plural) == ("apiextensions.k8s.io", "customresourcedefinitions"):
            self.types.set_crds(self.store.objects(rt.storage_key))

    def _empty_namespace(self, rt: ResourceType, key: Key, old: Obj) -> None:
        terminating = copy.deepcopy(old)
        terminating["metadata"]["deletionTimestamp"] = self.now()
        terminating.setdefault("status", {})["phase"] = "Terminating"
        self._commit(rt, key, terminating)
        namespace = key[1]
        for storage in self.store.storages():
            for obj in self.store.objects(storage, namespace):
                types = self.types.types_for_storage(storage)
                if types and types[0].namespaced:
                    final = copy.deepcopy(obj)
                    self._remove(types[0], (namespace, obj["metadata"]["name"]), final)

    def _drop_custom_resources(self, crd: Obj) -> None:
        spec = crd.get("spec") or {}
        storage = (spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))
        for obj in self.store.objects(storage):
            key = (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])
            final = copy.deepcopy(obj)
            rv = self.store.next_rv()
            final["metadata"]["resourceVersion"] = str(rv)
            self.store.remove(storage, key, final=final, rv=rv)

    def _index_owners(self, storage: tuple[str, str], event: Event) -> None:
        for source, add in ((event.prev, False), (event.obj if event.type != "DELETED" else None, True)):
            if source is None:
                continue
            meta = source.get("metadata") or {}
            ref = (storage, (meta.get("namespace", ""), meta.get("name", "")))
            for owner in meta.get("ownerReferences") or []:
                deps = self._dependents.setdefault(owner.get("uid", ""), set())
                if add:
                    deps.add(ref)
                else:
                    deps.discard(ref)

    def _collect_dependents(self, uid: str, policy: str | None) -> None:
        for storage, key in list(self._dependents.pop(uid, ())):
            obj = self.store.get(storage, key)
            types = self.types.types_for_storage(storage)
            if obj is None or not types:
                continue
            rt = types[0]
            refs = obj["metadata"].get("ownerReferences") or []
            remaining = [r for r in refs if r.get("uid") != uid]
            if policy == "Orphan" or remaining:
                new = copy.deepcopy(obj)
                new["metadata"]["ownerReferences"] = remaining
                if not remaining:
                    new["metadata"].pop("ownerReferences")
                self._commit(rt, key, new)
            else:
                self.delete(rt, key[0], key[1], options={"propagationPolicy": policy})


def _establish_crd(obj: Obj, now: str) -> None:
    spec = obj.get("spec") or {}
    obj["status"] = {
        "acceptedNames": spec.get("names") or {},
        "storedVersions": [v["name"] for v in spec.get("versions") or [] if v.get("storage")],
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
             "message": "no conflicts found", "lastTransitionTime": now},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
             "message": "the initial names have been accepted", "lastTransitionTime": now},
        ],
    }
