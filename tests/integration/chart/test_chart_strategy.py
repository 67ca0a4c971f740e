"""The Deployments' update strategy as kube-apiserver validates it.

Helm merges a user's `strategy` over the chart's default (RollingUpdate with a rollingUpdate block),
so `--set strategy.type=Recreate` alone would keep the default's rollingUpdate, which the API server
refuses ("may not be specified when strategy `type` is 'Recreate'"): the install would fail.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.integration.chart.conftest import FULLNAME, Rendered

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]

CONTROLLER = f"{FULLNAME}-controller"


def _strategy(rendered: Rendered, name: str) -> dict[str, Any]:
    return dict(rendered.one("Deployment", name)["spec"]["strategy"])


@pytest.mark.parametrize(("values", "name"), [
    pytest.param({"strategy": {"type": "Recreate"}}, FULLNAME, id="adapter"),
    pytest.param({"controller": {"strategy": {"type": "Recreate"}}}, CONTROLLER, id="controller"),
])
def test_recreate_strategy_renders_without_rolling_update(quick_render: Callable[..., Rendered],
                                                          values: dict[str, Any], name: str) -> None:
    assert _strategy(quick_render(values), name) == {"type": "Recreate"}


@pytest.mark.parametrize(("values", "name", "expected"), [
    pytest.param({}, FULLNAME, {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
                 id="adapter-default"),
    pytest.param({}, CONTROLLER, {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
                 id="controller-default"),
    pytest.param({"strategy": {"rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}}}, FULLNAME,
                 {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
                 id="adapter-prometheus-adapter-layout"),
])
def test_rolling_update_strategy_is_kept(quick_render: Callable[..., Rendered], values: dict[str, Any], name: str,
                                         expected: dict[str, Any]) -> None:
    assert _strategy(quick_render(values), name) == expected
