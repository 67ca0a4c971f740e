"""`spec.prediction` -> `AutoscalerSpec.prediction`: defaults, every field, and a `SpecError`
naming the field for a value the CRD would have refused (an object stored before the CRD knew it)."""

import copy

import pytest

from controller.algorithm.spec import PredictionMode, PredictionSpec
from controller.kube.hpa_spec import SpecError
from controller.kube.objects import autoscaler_from_object

SPEC = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 10,
        "metrics": [{"type": "Pods", "pods": {"metric": {"name": "rps"},
                                               "target": {"type": "AverageValue", "averageValue": "10"}}}]}


def obj(prediction=None, kind="PromAutoscaler"):
    spec = copy.deepcopy(SPEC)
    if prediction is not None:
        spec["prediction"] = prediction
    return {"kind": kind, "metadata": {"name": "web", "namespace": "shop"}, "spec": spec}


@pytest.mark.parametrize(("prediction", "expected"), [
    pytest.param(None, None, id="absent: Off"),
    pytest.param({}, PredictionSpec(), id="empty: the defaults (Off, 300 s, 14 days)"),
    pytest.param({"mode": "Active"}, PredictionSpec(mode=PredictionMode.ACTIVE), id="Active with defaults"),
    pytest.param({"mode": "ForecastOnly", "horizonSeconds": 600, "lookbackSeconds": 86_400 * 28,
                  "periodsSeconds": [86_400, 604_800]},
                 PredictionSpec(mode=PredictionMode.FORECAST_ONLY, horizon_seconds=600, lookback_seconds=86_400 * 28,
                                periods_seconds=(86_400, 604_800)), id="every field"),
    pytest.param({"mode": "Off", "horizonSeconds": 15, "lookbackSeconds": 86_400 * 90,
                  "periodsSeconds": [3600, 3600, 2_419_200, 7200]},
                 PredictionSpec(mode=PredictionMode.OFF, horizon_seconds=15, lookback_seconds=86_400 * 90,
                                periods_seconds=(3600, 3600, 2_419_200, 7200)), id="the bounds are inclusive"),
])
def test_prediction_is_read(prediction, expected):
    assert autoscaler_from_object(obj(prediction)).spec.prediction == expected


@pytest.mark.parametrize(("prediction", "message"), [
    pytest.param({"mode": "On"}, "spec.prediction.mode: Unsupported value: 'On': supported values: \"Off\", "
                 "\"ForecastOnly\", \"Active\"", id="mode enum"),
    pytest.param({"horizonSeconds": 14}, "spec.prediction.horizonSeconds: Invalid value: 14: must be an integer "
                 "between 15 and 3600", id="horizon below 15"),
    pytest.param({"horizonSeconds": 3601}, "spec.prediction.horizonSeconds: Invalid value: 3601", id="horizon above 1h"),
    pytest.param({"horizonSeconds": "300"}, "spec.prediction.horizonSeconds: Invalid value: '300'",
                 id="horizon not an integer"),
    pytest.param({"horizonSeconds": True}, "spec.prediction.horizonSeconds: Invalid value: True", id="horizon bool"),
    pytest.param({"lookbackSeconds": 86_399}, "spec.prediction.lookbackSeconds: Invalid value: 86399: must be an "
                 "integer between 86400 and 7776000", id="lookback below a day"),
    pytest.param({"lookbackSeconds": 90 * 86_400 + 1}, "spec.prediction.lookbackSeconds: Invalid value: 7776001",
                 id="lookback above 90 days"),
    pytest.param({"periodsSeconds": [86_400, 60]}, "spec.prediction.periodsSeconds[1]: Invalid value: 60: must be "
                 "an integer between 3600 and 2419200", id="period below an hour"),
    pytest.param({"periodsSeconds": [None]}, "spec.prediction.periodsSeconds[0]: Invalid value: None",
                 id="period null"),
    pytest.param({"periodsSeconds": [3600] * 5}, "spec.prediction.periodsSeconds: Too many: 5: must have at most 4 "
                 "items", id="five periods"),
    pytest.param({"periodsSeconds": 86_400}, "spec.prediction.periodsSeconds: Invalid value: 86400: must be a list",
                 id="periods not a list"),
    pytest.param("Active", "spec.prediction: Invalid value: 'Active': must be an object", id="not an object"),
])
def test_a_bad_prediction_names_the_field(prediction, message):
    with pytest.raises(SpecError) as err:
        autoscaler_from_object(obj(prediction))
    assert message in str(err.value)


def test_a_native_hpa_never_predicts():
    """An HPA has no spec.prediction; a field of that name on one (unknown to its API) is ignored."""
    hpa = obj({"mode": "Active"}, kind="HorizontalPodAutoscaler")
    assert autoscaler_from_object(hpa).spec.prediction is None
