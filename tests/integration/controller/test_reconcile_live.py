"""One reconcile against the real API-server stand-in (HTTPS, kubectl): what `kubectl describe pas`
and `kubectl get events` show when the scale target cannot be read."""

from __future__ import annotations

import json
import time

import pytest

from controller.algorithm import ControllerConfig
from controller.kube.events import KubeEventSink
from controller.kube.fake import FakePodLister
from controller.kube.objects import autoscaler_from_object
from controller.kube.scale import KubeScaleClient
from controller.kube.status_writer import KubeStatusWriter
from controller.metrics.fake import FakeMetricsSource
from controller.reconcile import Reconciler
from controller.report import Result
from kubecommon.kube.resources import ResourceResolver

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


async def test_a_missing_target_reads_as_the_api_server_words_it(cluster, standin_namespace, client):
    ns = standin_namespace
    cluster.apply({"apiVersion": "autoscaling.prom-autoscaler.io/v1alpha1", "kind": "PromAutoscaler",
                   "metadata": {"name": "web"},
                   "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "gone"},
                            "minReplicas": 1, "maxReplicas": 5,
                            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                                "type": "Utilization", "averageUtilization": 50}}}]}}, namespace=ns)
    stored = json.loads(cluster.kubectl("get", "pas", "web", "-n", ns, "-o", "json").stdout)
    events = KubeEventSink(client, instance="test-pod")
    events.start()
    reconciler = Reconciler(scale=KubeScaleClient(client, ResourceResolver(client)), pods=FakePodLister(),
                            metrics=FakeMetricsSource(), status=KubeStatusWriter(client), events=events,
                            config=ControllerConfig(), is_leader=lambda: True, wall_clock=time.time)
    out = await reconciler.sync(autoscaler_from_object(stored))
    await events.stop(drain_seconds=10)
    assert out.result is Result.FAILED_GET_SCALE
    back = json.loads(cluster.kubectl("get", "pas", "web", "-n", ns, "-o", "json").stdout)
    (able,) = [c for c in back["status"]["conditions"] if c["type"] == "AbleToScale"]
    assert (able["status"], able["reason"]) == ("False", "FailedGetScale")
    assert able["message"] == ('the HPA controller was unable to get the target\'s current scale: '
                               'deployments.apps "gone" not found')
    listed = json.loads(cluster.kubectl("get", "events", "-n", ns, "-o", "json").stdout)["items"]
    assert [e["message"] for e in listed if e["reason"] == "FailedGetScale"] == ['deployments.apps "gone" not found']
