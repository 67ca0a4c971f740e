"""The spec a backtest replays: a PromAutoscaler or an `autoscaling/v2` HPA manifest.

The conversion is the live controller's own (`controller.kube.objects.autoscaler_from_object`:
API defaults, quantities in milli-units, metric selectors, behavior), so the backtest decides on
exactly the spec the controller would. Here: checking the document is one of the two kinds, and
keeping what the replay needs around the algorithm's spec (name, namespace, scale target, sync
period, each metric's selector in query-string form).

Non-goals: reading files (the caller does), `status` (a replay starts from an empty status).
Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from controller.algorithm.spec import AutoscalerSpec, FetchFailure
from controller.kube.hpa_spec import SpecError as ObjectSpecError
from controller.kube.objects import API_VERSION, HPA_KIND, KIND, autoscaler_from_object

__all__ = ["BacktestSpec", "SpecError", "spec_from_manifest"]

HPA_API_VERSION = "autoscaling/v2"
_KINDS = {(API_VERSION, KIND), (HPA_API_VERSION, HPA_KIND)}


class SpecError(ValueError):
    """The manifest is not a spec the backtest can replay; the message says which field."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BacktestSpec:
    name: str
    namespace: str
    target_kind: str
    target_name: str
    sync_period: float
    autoscaler: AutoscalerSpec
    metric_selectors: tuple[str, ...]  # per metric, query-string form ("" for none)
    paused: bool = False


def spec_from_manifest(doc: object, *, source: str = "spec") -> BacktestSpec:
    """The spec a manifest describes, or `SpecError` naming the field at fault."""
    if not isinstance(doc, Mapping):
        raise SpecError(f"{source}: expected a YAML mapping (a {KIND} or {HPA_KIND})")
    if (doc.get("apiVersion"), doc.get("kind")) not in _KINDS:
        raise SpecError(f"{source}: apiVersion/kind {doc.get('apiVersion')}/{doc.get('kind')} is neither "
                        f"{API_VERSION} {KIND} nor {HPA_API_VERSION} {HPA_KIND}")
    try:
        obj = autoscaler_from_object({**doc, "status": {}})
    except ObjectSpecError as err:
        raise SpecError(f"{source}: {err}") from None
    for i, plan in enumerate(obj.metric_plans):
        if isinstance(plan, FetchFailure):
            raise SpecError(f"{source}: spec.metrics[{i}]: {plan.message}")
    return BacktestSpec(
        name=obj.key.name or obj.target.name, namespace=obj.key.namespace or "default",
        target_kind=obj.target.kind, target_name=obj.target.name, sync_period=float(obj.sync_period_seconds),
        autoscaler=obj.spec, paused=obj.paused,
        metric_selectors=tuple("" if isinstance(p, FetchFailure) else p.metric_selector for p in obj.metric_plans),
    )
