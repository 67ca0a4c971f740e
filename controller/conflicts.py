"""Which autoscalers fight over one target: the conflict guard's pure core.

Two autoscalers that scale the same workload undo each other's work (one scales up, the other
back down). A PromAutoscaler whose `scaleTargetRef` is also claimed by a native HPA or by another
PromAutoscaler must not scale; reconcile sets `ScalingActive=False` with reason
`ConflictingAutoscaler` and emits a Warning event with the message built here.

Targets are the same when namespace, kind, name and the apiVersion's *group* match: upstream
resolves only the group of `scaleTargetRef.apiVersion` (any version of the group reaches the same
`/scale`), so `apps/v1` and `apps/v1beta2` name one Deployment.

Non-goals: reading caches (the caller passes claims), selector overlap (upstream's
AmbiguousSelector check is separate). Pure: no I/O.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from controller.kube.ports import ObjectKey, TargetRef


@dataclass(frozen=True, slots=True, kw_only=True)
class Claim:
    """One autoscaler's target, in its own namespace."""

    key: ObjectKey
    target: TargetRef


@dataclass(frozen=True, slots=True, kw_only=True)
class _TargetId:
    namespace: str
    group: str
    kind: str
    name: str


def api_group(api_version: str) -> str:
    """`apps/v1` → `apps`; `v1` (core) → `""`."""
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def _target_id(claim: Claim) -> _TargetId:
    t = claim.target
    return _TargetId(namespace=claim.key.namespace, group=api_group(t.api_version), kind=t.kind, name=t.name)


def _describe(target: _TargetId) -> str:
    group = f".{target.group}" if target.group else ""
    return f"{target.kind}{group} {target.namespace}/{target.name}"


def find_conflicts(claims: Iterable[Claim]) -> Mapping[ObjectKey, str]:
    """Every key whose target another autoscaler also claims, with a message naming the others."""
    by_target: defaultdict[_TargetId, list[ObjectKey]] = defaultdict(list)
    for claim in claims:
        by_target[_target_id(claim)].append(claim.key)
    out: dict[ObjectKey, str] = {}
    for target, keys in by_target.items():
        if len(keys) < 2:
            continue
        for key in keys:
            others = sorted(f"{o.kind} {o.namespace}/{o.name}" for o in keys if o != key)
            out[key] = (f"the target {_describe(target)} is also scaled by {', '.join(others)}; "
                        f"this autoscaler will not scale it until only one autoscaler targets it")  # fmt: skip
    return out
