"""A PromAutoscaler stored while the served CRD lacked upstream's HPA rules (an older CRD, or
validation off): the controller (`python -m controller`) never scales it, and `kubectl` shows why:
`kubectl get pas -o yaml` has `ScalingActive=False InvalidSpec` with the field and message, the
REASON column says `InvalidSpec`, `kubectl get events` has one Warning `InvalidSpec` (not one per
sync). After the CRD upgrade an edit that keeps it invalid is refused, and fixing the spec with
`kubectl patch` clears the conditions at the next sync.

The stand-in checks the CRD's schema and CEL rules at admission as kube-apiserver does and has no
way around them, so the object is written while the served CRD lacks its `x-kubernetes-validations`;
the chart's CRD is applied over it later. The controller writes the status before the upgrade: the
stand-in has no validation ratcheting (kube-apiserver 1.30+ does, and accepts a status write of an
object whose unchanged spec a newer CRD would refuse), so after the upgrade it refuses that write
(422) and only the Warning event (and `FailedUpdateStatus`) would tell. Its own stand-in: the
session's keeps serving the chart's CRD to the other tests throughout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, BinaryIO

import pytest
import yaml

from hack.stack.controller_stack import wait_until
from hack.stack.processes import free_port, terminate
from tests.fixtures.standin import StandIn, start_standin
from tests.integration.standin.manifests import deployment
from tests.paths import REPO

pytestmark = [pytest.mark.integration, pytest.mark.timeout(120)]

CRD = REPO / "charts" / "prom-autoscaler" / "crds" / "promautoscalers.yaml"
PAS = "promautoscalers.autoscaling.prom-autoscaler.io"
NS = "shop"
MESSAGE = "spec.maxReplicas: Invalid value: 5: must be greater than or equal to `minReplicas`"


def _eventually(check: Callable[[], Any], timeout: float, what: str) -> Any:
    return wait_until(check, timeout=timeout, what=what)


def _without_rules(node: Any) -> Any:
    """The CRD as it was before the upgrade: the same schema without its CEL rules."""
    if isinstance(node, dict):
        return {k: _without_rules(v) for k, v in node.items() if k != "x-kubernetes-validations"}
    if isinstance(node, list):
        return [_without_rules(v) for v in node]
    return node


@pytest.fixture(scope="module")
def standin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandIn]:
    with start_standin(tmp_path_factory.mktemp("invalid-spec-standin"), "--simulate-workloads",
                       "--ready-delay", "0.5") as cluster:
        yield cluster


def _status(cluster: StandIn) -> dict[str, Any]:
    out = cluster.kubectl("get", PAS, "web", "-n", NS, "-o", "json")
    return dict(json.loads(out.stdout).get("status") or {})


def _conditions(cluster: StandIn) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in _status(cluster).get("conditions") or ()}


def _events(cluster: StandIn) -> list[dict[str, Any]]:
    out = cluster.kubectl("get", "events", "-n", NS, "--field-selector", "involvedObject.name=web", "-o", "json")
    return [e for e in json.loads(out.stdout)["items"] if e["involvedObject"]["kind"] == "PromAutoscaler"]


def _start_controller(cluster: StandIn, log: BinaryIO) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
    return subprocess.Popen([sys.executable, "-m", "controller", "--kubeconfig", str(cluster.kubeconfig),
                             "--leader-elect=false", "--metrics-port", str(free_port()), "--metrics-bind-address", "127.0.0.1",
                             f"--watch-namespace={NS}", "--sync-period=3s"],
                            cwd=REPO, env=env, stdout=log,
                            stderr=subprocess.STDOUT)  # fmt: skip


def test_a_stored_invalid_spec_is_shown_by_kubectl_and_cleared_by_a_fix(standin: StandIn, tmp_path: Path) -> None:
    cluster = standin
    cluster.ensure_namespace(NS)
    cluster.apply(deployment("web", 2), namespace=NS)
    crd = yaml.safe_load(CRD.read_text())
    cluster.kubectl("apply", "-f", "-", input=json.dumps(_without_rules(crd)))
    _eventually(lambda: cluster.kubectl("get", PAS, "-n", NS, check=False).returncode == 0, 20, "the old CRD served")
    pas = {"apiVersion": "autoscaling.prom-autoscaler.io/v1alpha1", "kind": "PromAutoscaler",
           "metadata": {"name": "web"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "minReplicas": 6, "maxReplicas": 5,
                    "metrics": [{"type": "External", "external": {"metric": {"name": "queue_depth"},
                                 "target": {"type": "AverageValue", "averageValue": "10"}}}]}}
    cluster.kubectl("apply", "-n", NS, "-f", "-", input=json.dumps(pas))

    log = (tmp_path / "controller.log").open("wb")
    proc = _start_controller(cluster, log)
    try:
        active = _eventually(lambda: (c := _conditions(cluster).get("ScalingActive")) and c["reason"] == "InvalidSpec"
                             and c, 30, "ScalingActive=False InvalidSpec")  # fmt: skip
        assert active["status"] == "False" and active["message"] == MESSAGE
        conditions = _conditions(cluster)
        assert (conditions["AbleToScale"]["status"], conditions["AbleToScale"]["reason"]) == ("False", "InvalidSpec")
        assert _status(cluster)["observedGeneration"] == 1
        shown = cluster.kubectl("get", "pas", "web", "-n", NS).stdout
        assert "InvalidSpec" in shown.splitlines()[1], shown
        _eventually(lambda: _events(cluster), 10, "the Warning event")
        time.sleep(7)  # two more syncs at 3 s
        (event,) = _events(cluster)
        assert (event["type"], event["reason"], event["message"], event["count"]) == \
            ("Warning", "InvalidSpec", MESSAGE, 1)
        print(shown, cluster.kubectl("get", "events", "-n", NS).stdout, sep="\n")
        described = cluster.kubectl("describe", "pas", "web", "-n", NS).stdout
        assert "InvalidSpec" in described and MESSAGE in described, described
        deployed = json.loads(cluster.kubectl("get", "deployment", "web", "-n", NS, "-o", "json").stdout)
        assert deployed["spec"]["replicas"] == 2, "never scaled to the invalid minReplicas of 6"

        cluster.kubectl("apply", "-f", str(CRD))  # the upgrade: kube-apiserver's HPA rules now apply
        refused = cluster.kubectl("patch", PAS, "web", "-n", NS, "--type=merge", "-p", '{"spec":{"maxReplicas":4}}',
                                  check=False)  # fmt: skip
        assert refused.returncode == 1 and "must be greater than or equal to `minReplicas`" in refused.stderr
        cluster.kubectl("patch", PAS, "web", "-n", NS, "--type=merge", "-p", '{"spec":{"minReplicas":1}}')
        able = _eventually(lambda: (c := _conditions(cluster).get("AbleToScale")) and c["reason"] != "InvalidSpec"
                            and c, 30, "the conditions set afresh")  # fmt: skip
        assert (able["status"], able["reason"]) == ("True", "SucceededGetScale")
        after = _status(cluster)
        assert after["observedGeneration"] == 2
        assert "InvalidSpec" not in {c["reason"] for c in after["conditions"]}
        assert after["lastDecision"]["limitingReason"] != "InvalidSpec"
        assert proc.poll() is None, "the controller exited"
    finally:
        terminate(proc)
        log.close()
        print((tmp_path / "controller.log").read_text()[-4000:])
