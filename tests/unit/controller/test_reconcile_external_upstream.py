"""External metrics as upstream's HPA reports them, read on the PromAutoscaler a user inspects
(`kubectl describe`/`get -o yaml`): the ScalingActive message and the Warning event name the
metric as `GetExternal{,PerPod}MetricReplicas` do (`unable to get external metric
<namespace>/<metric>/<selector %+v>: <error>`), and a failed or empty read never scales."""

from __future__ import annotations

from typing import Any

import pytest

from controller.algorithm.spec import ExternalSamples, FetchFailure, Observation
from controller.report import Result

from tests.unit.controller.world import NS, World, pas_json

NOT_FOUND = ("unable to fetch metrics from external metrics API: "
             "the server could not find the metric queue for namespaces")
SELECTOR = {"matchLabels": {"queue": "orders"}}
PRINTED = ("&LabelSelector{MatchLabels:map[string]string{queue: orders,},"
           "MatchExpressions:[]LabelSelectorRequirement{},}")


def _external(target: dict[str, str], selector: dict[str, Any] | None = None) -> dict[str, Any]:
    metric: dict[str, Any] = {"name": "queue"}
    if selector is not None:
        metric["selector"] = selector
    return {"type": "External", "external": {"metric": metric, "target": target}}


def _active_message(w: World) -> str:
    return next(c["message"] for c in w.obj_json["status"]["conditions"] if c["type"] == "ScalingActive")


@pytest.mark.parametrize(("target", "selector", "answer", "inner"), [
    pytest.param({"type": "AverageValue", "averageValue": "10"}, SELECTOR, FetchFailure(message=NOT_FOUND),
                 f"unable to get external metric {NS}/queue/{PRINTED}: {NOT_FOUND}",
                 id="AverageValue, API error, selector printed as %+v"),
    pytest.param({"type": "Value", "value": "10"}, SELECTOR, FetchFailure(message=NOT_FOUND),
                 f"unable to get external metric {NS}/queue/{PRINTED}: {NOT_FOUND}", id="Value, API error"),
    pytest.param({"type": "AverageValue", "averageValue": "10"}, SELECTOR, ExternalSamples(values=()),
                 f"unable to get external metric {NS}/queue/{PRINTED}: no metrics returned from external metrics API",
                 id="AverageValue, empty list"),
    pytest.param({"type": "Value", "value": "10"}, SELECTOR,
                 FetchFailure(message="no metrics returned from external metrics API"),
                 f"unable to get external metric {NS}/queue/{PRINTED}: no metrics returned from external metrics API",
                 id="Value, empty list as the metrics source reports it"),
])  # fmt: skip
async def test_a_failed_external_read_names_namespace_metric_and_selector_and_never_scales(
        target: dict[str, str], selector: dict[str, Any] | None, answer: Observation, inner: str) -> None:
    w = World(obj_json=pas_json(metrics=[_external(target, selector)]))
    w.set_replicas(3)
    w.answer(answer)
    out = await w.sync()
    assert (out.result, w.replicas()) == (Result.BLOCKED, 3), "never scaled on a metric that could not be read"
    assert w.condition("ScalingActive") == (False, "FailedGetExternalMetric")
    assert _active_message(w) == f"the HPA was unable to compute the replica count: {inner}"
    warnings = [r.event.message for r in w.events.recorded if r.event.reason == "FailedGetExternalMetric"]
    assert warnings == [inner]


async def test_a_metric_without_selector_prints_it_as_nil_like_the_generated_go_stringer() -> None:
    """`%+v` of a nil `*metav1.LabelSelector` calls its generated `String()`, which answers `nil`
    (as in `kubectl get events` of a real cluster: `external metric <name>(nil) above target`)."""
    w = World(obj_json=pas_json(metrics=[_external({"type": "AverageValue", "averageValue": "10"})]))
    w.set_replicas(3)
    w.observe(50_000)  # 50 in all, 10 a replica wanted
    await w.sync()
    assert w.replicas() == 5
    rescales = [r.event.message for r in w.events.recorded if r.event.reason == "SuccessfulRescale"]
    assert rescales == ["New size: 5; reason: external metric queue(nil) above target"]
    assert _active_message(w) == ("the HPA was able to successfully calculate a replica count from "
                                  "external metric queue(nil)")
    w.answer(FetchFailure(message=NOT_FOUND))
    w.now += 30
    await w.sync()
    assert _active_message(w) == (f"the HPA was unable to compute the replica count: "
                                  f"unable to get external metric {NS}/queue/nil: {NOT_FOUND}")
