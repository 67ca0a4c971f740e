"""What a user reads when `kubectl apply` of a PromAutoscaler breaks one of upstream's HPA spec
rules (kube-apiserver's `ValidateHorizontalPodAutoscaler`): the chart's CRD on the stand-in API
server refuses it, naming the field with a message of the same meaning; nothing is stored."""

from __future__ import annotations

import json
import textwrap

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

MANIFEST = """\
apiVersion: autoscaling.prom-autoscaler.io/v1alpha1
kind: PromAutoscaler
metadata:
  name: web
spec:
  scaleTargetRef:
    apiVersion: {api_version}
    kind: Deployment
    name: web
  minReplicas: {min_replicas}
  maxReplicas: {max_replicas}
  metrics:
  - type: Pods
    pods:
      metric:
        name: http_requests_per_second
      target:
        type: {target_type}
        {target_field}: "{target_value}"
  behavior:
    scaleDown:
      policies: {policies}
"""
GOOD = {"api_version": "apps/v1", "min_replicas": 2, "max_replicas": 10, "target_type": "AverageValue",
        "target_field": "averageValue", "target_value": "100", "policies": "[{type: Pods, value: 1, periodSeconds: 60}]"}


def apply(cluster, namespace: str, **changes: object):
    manifest = MANIFEST.format(**{**GOOD, **changes})
    return cluster.kubectl("apply", "-n", namespace, "-f", "-", input=manifest, check=False)


@pytest.mark.parametrize(("changes", "stderr"), [
    pytest.param({"max_replicas": 1}, 'The PromAutoscaler "web" is invalid: spec.maxReplicas: Invalid value: '
                 '"object": must be greater than or equal to `minReplicas`', id="max-below-min"),
    pytest.param({"api_version": "v1"}, 'The PromAutoscaler "web" is invalid: spec.scaleTargetRef.apiVersion: '
                 'Invalid value: "object": apiVersion must specify API group', id="target-without-group"),
    pytest.param({"target_type": "Value", "target_field": "value"},
                 'The PromAutoscaler "web" is invalid: spec.metrics[0].pods.target.averageValue: Required value: '
                 "must specify a positive target averageValue", id="pods-needs-averageValue"),
    pytest.param({"policies": "[]"}, 'The PromAutoscaler "web" is invalid: spec.behavior.scaleDown.policies: '
                 "Required value: must specify at least one Policy", id="empty-policies"),
    pytest.param({"target_value": "0"}, 'The PromAutoscaler "web" is invalid: spec.metrics[0].pods.target.'
                 'averageValue: Invalid value: "0": spec.metrics[0].pods.target.averageValue in body should match',
                 id="zero-target"),
])
def test_kubectl_apply_refuses_what_kube_apiserver_refuses_for_an_hpa(cluster, standin_namespace, changes, stderr):
    out = apply(cluster, standin_namespace, **changes)
    assert out.returncode == 1, out.stdout
    assert stderr in out.stderr
    listed = cluster.kubectl("get", "pas", "-n", standin_namespace, "-o", "json")
    assert json.loads(listed.stdout)["items"] == []


def test_an_update_that_breaks_a_rule_is_refused_and_the_stored_spec_kept(cluster, standin_namespace):
    assert apply(cluster, standin_namespace).returncode == 0
    out = apply(cluster, standin_namespace, min_replicas=12)
    assert out.returncode == 1
    assert "spec.maxReplicas: Invalid value: \"object\": must be greater than or equal to `minReplicas`" in out.stderr
    stored = json.loads(cluster.kubectl("get", "pas", "web", "-n", standin_namespace, "-o", "json").stdout)
    assert (stored["spec"]["minReplicas"], stored["spec"]["maxReplicas"]) == (2, 10)


def test_a_pasted_upstream_hpa_spec_is_accepted(cluster, standin_namespace):
    hpa_spec = textwrap.dedent("""\
        apiVersion: autoscaling.prom-autoscaler.io/v1alpha1
        kind: PromAutoscaler
        metadata:
          name: rc
        spec:
          scaleTargetRef: {apiVersion: v1, kind: ReplicationController, name: legacy}
          maxReplicas: 4
          metrics:
          - type: Resource
            resource: {name: cpu, target: {type: AverageValue, averageValue: 250m}}
          - type: Object
            object:
              describedObject: {apiVersion: v1, kind: Service, name: front}
              metric: {name: hits}
              target: {type: Value, value: 2k}
          behavior:
            scaleUp: {tolerance: "0.05", selectPolicy: Disabled}
        """)
    out = cluster.kubectl("apply", "-n", standin_namespace, "-f", "-", input=hpa_spec, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "promautoscaler.autoscaling.prom-autoscaler.io/rc created"
