"""Fixtures the adapter's fault tests share: a fault-injecting proxy in front of the real Prometheus."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hack.stack.local_prometheus import LocalPrometheus
from tests.integration.adapter.fault_proxy import FaultProxy


@pytest.fixture
def proxy(prometheus: LocalPrometheus) -> Iterator[FaultProxy]:
    proxy = FaultProxy(prometheus.url).start()
    yield proxy
    proxy.stop()
