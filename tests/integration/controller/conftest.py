"""The controller's end-to-end stack, started once per session (hack.stack.controller_stack): exporter,
private Prometheus, the API-server stand-in with its workload simulator, the adapter behind the
four APIServices, and the PromAutoscaler CRD. Each test gets a fresh namespace and starts its own
controller replicas (killed at teardown), each behind a recording proxy.

Short windows keep the tests quick: objects sync every 3 s (the spec's floor), the default
downscale stabilization is 10 s, leader election 4 s / 3 s / 1 s.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator

import pytest

from hack.stack.controller_stack import CRD_FILE, ControllerStack
from kubecommon.kube.client import KubeClient
from kubecommon.kube.config import load_kube_config
from tests.fixtures.standin import StandIn

FAST_FLAGS = ("--horizontal-pod-autoscaler-downscale-stabilization=10s", "--sync-period=3s",
              "--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s",
              "--leader-elect-retry-period=1s", "--status-checkpoint-interval=3s")
_names = itertools.count(1)


@pytest.fixture(scope="session")
def controller_stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControllerStack]:
    stack = ControllerStack.start(tmp_path_factory.mktemp("controller-stack"))
    try:
        yield stack
    finally:
        stack.close()


@pytest.fixture
def ns(controller_stack: ControllerStack, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace for one test; its controllers are killed and its proxies stopped after."""
    name = f"e2e-{next(_names)}-{request.node.name.split('[')[0][5:25].replace('_', '-')}".rstrip("-")
    controller_stack.create_namespace(name)
    yield name
    for replica in controller_stack.controllers:
        if replica.running:
            print(f"--- {replica.name} log tail ---\n{replica.log_tail(40)}")
    controller_stack.stop_controllers()
    controller_stack.kubectl("delete", "namespace", name, "--wait=false", check=False)


@pytest.fixture(scope="module")
def cluster(kube_standin: StandIn) -> StandIn:
    """The session's stand-in with the chart's PromAutoscaler CRD established (a module that needs more
    CRDs defines its own `cluster`)."""
    kube_standin.kubectl("apply", "-f", str(CRD_FILE))
    kube_standin.kubectl("wait", "--for=condition=Established", "crd/promautoscalers.autoscaling.prom-autoscaler.io")
    return kube_standin


@pytest.fixture
async def client(cluster: StandIn) -> AsyncIterator[KubeClient]:
    """A started KubeClient of the module's `cluster`."""
    kube = KubeClient(load_kube_config(cluster.kubeconfig, context="standin"), timeout=5.0)
    await kube.start()
    yield kube
    await kube.close()
