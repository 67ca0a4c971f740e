"""Two leader electors against the real API-server stand-in (HTTPS, real Lease storage, 409s).

Short timings (lease 3 s, renew 2 s, retry 0.5 s: the same ratios' constraints as 15/10/2) keep the
test quick; what is checked is what a user running two replicas sees: one leader at a time, a killed
leader replaced within the lease duration plus one jittered retry, a released lease taken at once,
and the Lease as kubectl shows it (MicroTime stamps, transitions counted).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator

import pytest

from controller.run.leader import LeaderElector
from kubecommon.kube.client import KubeClient
from kubecommon.kube.config import load_kube_config
from tests.fixtures.standin import StandIn

LEASE, RENEW, RETRY = 3.0, 2.0, 0.5
MICRO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


@pytest.fixture
async def clients(kube_standin: StandIn) -> AsyncIterator[list[KubeClient]]:
    made = [KubeClient(load_kube_config(kube_standin.kubeconfig), timeout=5.0) for _ in range(2)]
    for client in made:
        await client.start()
    yield made
    for client in made:
        await client.close()


def elector(client: KubeClient, namespace: str, identity: str) -> LeaderElector:
    return LeaderElector(client, namespace, "prom-autoscaler-controller", identity,
                         lease_duration=LEASE, renew_deadline=RENEW, retry_period=RETRY)


async def _idle() -> None:
    await asyncio.Event().wait()


async def _nothing() -> None:
    return None


async def seconds_until(check, limit: float) -> float:
    loop = asyncio.get_running_loop()
    start = loop.time()
    while not check():
        assert loop.time() - start < limit, f"not within {limit} s"
        await asyncio.sleep(0.05)
    return loop.time() - start


def lease(standin: StandIn, namespace: str) -> dict:
    out = standin.kubectl("get", "lease", "prom-autoscaler-controller", "-n", namespace, "-o", "json")
    return json.loads(out.stdout)["spec"]


@pytest.mark.integration
@pytest.mark.timeout(40)
@pytest.mark.parametrize("shutdown", ["killed", "released"])
async def test_two_replicas_one_leader_and_handover(kube_standin: StandIn, standin_namespace: str,
                                                    clients: list[KubeClient], shutdown: str) -> None:
    a, b = elector(clients[0], standin_namespace, "replica-a"), elector(clients[1], standin_namespace, "replica-b")
    run_a = asyncio.create_task(a.run(_idle, _nothing))
    await seconds_until(a.is_leader, 5.0)
    run_b = asyncio.create_task(b.run(_idle, _nothing))
    for _ in range(12):  # 3 s: several renews and follower retries
        await asyncio.sleep(0.25)
        assert a.is_leader() and not b.is_leader()
    spec = await asyncio.to_thread(lease, kube_standin, standin_namespace)
    assert spec["holderIdentity"] == "replica-a" and spec["leaseDurationSeconds"] == 3
    assert MICRO.fullmatch(spec["renewTime"]) and MICRO.fullmatch(spec["acquireTime"])

    run_a.cancel()
    await asyncio.gather(run_a, return_exceptions=True)
    if shutdown == "released":
        assert await a.release()
        assert not a.is_leader()
    else:  # no more renews: the fence closes at the renew deadline, before b may take over
        await seconds_until(lambda: not a.is_leader(), RENEW + 0.2)
        assert not b.is_leader()
    waited = await seconds_until(b.is_leader, LEASE + 2 * RETRY * 2.2 + 2.0)
    # released: the next jittered retry; killed: the standby saw the last renew up to one jittered
    # retry late, waits the lease from then, and retries up to one jittered retry later
    limit = RETRY * 2.2 + 0.5 if shutdown == "released" else LEASE + 2 * RETRY * 2.2 + 0.5
    assert waited <= limit, f"handover took {waited:.2f} s (limit {limit:.2f} s)"
    spec = await asyncio.to_thread(lease, kube_standin, standin_namespace)
    assert spec["holderIdentity"] == "replica-b" and spec["leaseTransitions"] == 1
    run_b.cancel()
    await asyncio.gather(run_b, return_exceptions=True)
    assert await b.release()
    assert (await asyncio.to_thread(lease, kube_standin, standin_namespace))["holderIdentity"] in ("", None)
