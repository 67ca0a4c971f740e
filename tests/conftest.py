"""Root test configuration: shared fixtures live in tests/fixtures/ as pytest plugins.

Property tests (hypothesis) explore many examples per test and, on a fresh machine, first build
hypothesis' character tables; the 2 s per-test limit is for example-based unit tests, so property
tests get a longer one, and no per-example deadline (a loaded CI machine must not turn a slow
example into a failure). Under CI they are derandomized so a run is reproducible.

Session-scoped fixtures (the stand-in, Prometheus, the adapter stack) are torn down in the
teardown of whichever test runs last, which is usually a 2 s unit test: stopping those processes
on a loaded machine takes longer than that, and a timeout there would leave them unreaped. The
last test therefore gets the teardown budget of the integration fixtures.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

pytest_plugins = [
    "tests.fixtures.prometheus",
    "tests.fixtures.standin",
    "tests.fixtures.adapter",
]

PROPERTY_TEST_TIMEOUT_S = 60
SESSION_TEARDOWN_TIMEOUT_S = 120

settings.register_profile("project", deadline=None, derandomize=bool(os.environ.get("CI")))
settings.load_profile("project")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        function = getattr(item, "function", None)
        if getattr(function, "is_hypothesis_test", False) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(PROPERTY_TEST_TIMEOUT_S))
    if items:
        last = items[-1]
        marker = last.get_closest_marker("timeout")
        current = float(marker.args[0]) if marker is not None and marker.args else 0.0
        last.add_marker(pytest.mark.timeout(current + SESSION_TEARDOWN_TIMEOUT_S), append=False)
