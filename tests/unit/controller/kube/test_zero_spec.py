"""Scale to zero as a PromAutoscaler user writes it: minReplicas 0, spec.scaleToZero, target.activationValue,
read by `controller.kube.objects`; the cooldown's start comes back from the status checkpoint after a restart."""

from __future__ import annotations

import pytest

from controller.algorithm.behavior import ScaleHistory
from controller.kube.hpa_spec import SpecError
from controller.kube.objects import autoscaler_from_object
from controller.kube.status import history_checkpoint

T0 = 1_700_000_000.0
QUEUE = {"type": "External", "external": {"metric": {"name": "queue"},
                                          "target": {"type": "AverageValue", "averageValue": "10",
                                                     "activationValue": "500m"}}}
CPU = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}


def pas(**spec):
    body = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "worker"}, "maxReplicas": 10,
            "minReplicas": 0, "metrics": [CPU, QUEUE], **spec}
    return {"apiVersion": "autoscaling.prom-autoscaler.io/v1alpha1", "kind": "PromAutoscaler",
            "metadata": {"name": "worker", "namespace": "jobs"}, "spec": body}


def test_scale_to_zero_fields_are_read_with_the_crd_defaults():
    spec = autoscaler_from_object(pas()).spec
    assert spec.min_replicas == 0 and spec.scale_to_zero is not None and spec.scale_to_zero.cooldown_seconds == 300
    assert spec.metrics[1].target is not None and spec.metrics[1].target.activation_value == 500
    assert autoscaler_from_object(pas(scaleToZero={"cooldownSeconds": 5})).spec.scale_to_zero.cooldown_seconds == 5


@pytest.mark.parametrize(("spec", "message"), [
    pytest.param({"metrics": [CPU]}, "spec.metrics: Forbidden: must specify at least one Object or External metric",
                 id="min-0-with-only-a-resource-metric"),
    pytest.param({"scaleToZero": {"cooldownSeconds": -1}}, "spec.scaleToZero.cooldownSeconds: Invalid value: -1",
                 id="negative-cooldown"),
    pytest.param({"scaleToZero": "soon"}, "spec.scaleToZero: Invalid value", id="not-an-object"),
])
def test_bad_scale_to_zero_specs_name_the_field(spec, message):
    with pytest.raises(SpecError, match=message.replace("[", r"\[")):
        autoscaler_from_object(pas(**spec))


def test_the_cooldown_start_survives_a_restart_through_the_status_checkpoint():
    saved = history_checkpoint(ScaleHistory(idle_since=T0 - 42.5), now=T0)
    obj = {**pas(), "status": {"scaleHistory": saved}}
    restored = autoscaler_from_object(obj)
    assert restored.history is not None and restored.history.idle_since == T0 - 42.5 and restored.problems == ()
