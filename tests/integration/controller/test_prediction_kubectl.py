"""`spec.prediction` as a kubectl user meets it on the stand-in API server with the chart's CRD:
a bad value is refused naming the field, the defaults are filled in, `kubectl explain` documents
every field, and `kubectl get pas -o wide` prints the PREDICTED column (plain `get` is unchanged)."""

from __future__ import annotations

import json

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

MANIFEST = """\
apiVersion: autoscaling.prom-autoscaler.io/v1alpha1
kind: PromAutoscaler
metadata:
  name: web
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: web}}
  maxReplicas: 10
  metrics:
  - type: Pods
    pods: {{metric: {{name: rps}}, target: {{type: AverageValue, averageValue: "10"}}}}
  prediction: {prediction}
"""
INVALID = 'The PromAutoscaler "web" is invalid: '


def apply(cluster, namespace: str, prediction: str):
    return cluster.kubectl("apply", "-n", namespace, "-f", "-", input=MANIFEST.format(prediction=prediction),
                           check=False)


@pytest.mark.parametrize(("prediction", "stderr"), [
    pytest.param("{mode: Always}", 'spec.prediction.mode: Unsupported value: "Always": supported values: "Off", '
                 '"ForecastOnly", "Active"', id="mode"),
    # YAML 1.1 (kubectl's parser) reads an unquoted Off as the boolean false: the description says to quote it
    pytest.param("{mode: Off}", 'spec.prediction.mode: Invalid value: "boolean": spec.prediction.mode in body must '
                 "be of type string", id="unquoted-Off-is-a-boolean"),
    pytest.param("{horizonSeconds: 10}", "spec.prediction.horizonSeconds: Invalid value: 10: "
                 "spec.prediction.horizonSeconds in body should be greater than or equal to 15", id="horizon-floor"),
    pytest.param("{horizonSeconds: 7200}", "spec.prediction.horizonSeconds: Invalid value: 7200: "
                 "spec.prediction.horizonSeconds in body should be less than or equal to 3600", id="horizon-ceiling"),
    pytest.param("{lookbackSeconds: 3600}", "spec.prediction.lookbackSeconds: Invalid value: 3600: "
                 "spec.prediction.lookbackSeconds in body should be greater than or equal to 86400", id="lookback-floor"),
    pytest.param("{lookbackSeconds: 8000000}", "spec.prediction.lookbackSeconds: Invalid value: 8000000: "
                 "spec.prediction.lookbackSeconds in body should be less than or equal to 7776000",
                 id="lookback-ceiling"),
    pytest.param("{periodsSeconds: [86400, 60]}", "spec.prediction.periodsSeconds[1]: Invalid value: 60: "
                 "spec.prediction.periodsSeconds[1] in body should be greater than or equal to 3600", id="period-floor"),
    pytest.param("{periodsSeconds: [3600, 7200, 86400, 604800, 1209600]}",
                 "spec.prediction.periodsSeconds: Too many: 5: must have at most 4 items", id="five-periods"),
    pytest.param('{horizonSeconds: "300"}', "spec.prediction.horizonSeconds: Invalid value: \"string\": "
                 "spec.prediction.horizonSeconds in body must be of type integer", id="horizon-not-an-integer"),
])
def test_a_bad_prediction_is_refused_naming_the_field(cluster, standin_namespace, prediction, stderr):
    out = apply(cluster, standin_namespace, prediction)
    assert out.returncode == 1, out.stdout
    assert INVALID in out.stderr and stderr in out.stderr, out.stderr
    listed = cluster.kubectl("get", "pas", "-n", standin_namespace, "-o", "json")
    assert json.loads(listed.stdout)["items"] == []


def test_a_quoted_off_is_accepted(cluster, standin_namespace):
    assert apply(cluster, standin_namespace, '{mode: "Off"}').returncode == 0


def test_defaults_are_filled_in_and_the_predicted_column_is_wide_only(cluster, standin_namespace):
    assert apply(cluster, standin_namespace, "{mode: Active}").returncode == 0
    stored = json.loads(cluster.kubectl("get", "pas", "web", "-n", standin_namespace, "-o", "json").stdout)
    assert stored["spec"]["prediction"] == {"mode": "Active", "horizonSeconds": 300, "lookbackSeconds": 1_209_600}
    cluster.kubectl("patch", "pas", "web", "-n", standin_namespace, "--subresource=status", "--type=merge", "-p",
                    json.dumps({"status": {"prediction": {"mode": "Active", "replicas": 6, "reactiveReplicas": 4,
                                                          "used": True, "reason": "ForecastTrusted", "message": "m",
                                                          "metrics": [{"name": "Pods rps", "forecast": "60",
                                                                       "replicas": 6, "trusted": True,
                                                                       "skill": "0.42",
                                                                       "historySeconds": 1209600}]}}}))
    wide = cluster.kubectl("get", "pas", "web", "-n", standin_namespace, "-o", "wide").stdout.splitlines()
    at = wide[0].index("PREDICTED")  # cells of unset fields are blank: read the column by its offset
    assert wide[1][at:].split()[0] == "6", wide
    plain = cluster.kubectl("get", "pas", "-n", standin_namespace).stdout.splitlines()[0].split()
    assert plain == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "MODE", "REASON", "AGE"]
    status = json.loads(cluster.kubectl("get", "pas", "web", "-n", standin_namespace, "-o", "json").stdout)["status"]
    assert status["prediction"]["metrics"][0]["skill"] == "0.42"  # nothing pruned


@pytest.mark.parametrize("output", ["plaintext", "plaintext-openapiv2"])
def test_kubectl_explain_documents_every_prediction_field(cluster, output):
    out = cluster.kubectl("explain", "promautoscaler.spec.prediction", f"--output={output}").stdout
    assert "Predictive scaling." in out
    for field in ("mode", "horizonSeconds", "lookbackSeconds", "periodsSeconds"):
        assert field in out
    lookback = cluster.kubectl("explain", "pas.spec.prediction.lookbackSeconds", f"--output={output}").stdout
    assert "needs at least 2 days of samples" in " ".join(lookback.split())  # kubectl wraps the text
    status = cluster.kubectl("explain", "pas.status.prediction.metrics", f"--output={output}").stdout
    for field in ("forecast", "replicas", "trusted", "skill", "historySeconds"):
        assert field in status
