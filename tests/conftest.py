"""Root test configuration: shared fixtures live in tests/fixtures/ as pytest plugins.

Property tests (hypothesis) explore many examples per test and, on a fresh machine, first build
hypothesis' character tables; the 2 s per-test limit is for example-based unit tests, so property
tests get a longer one, and no per-example deadline (a loaded CI machine must not turn a slow
example into a failure). Under CI they are derandomized so a run is reproducible.

Session-scoped fixtures (the stand-in, Prometheus, the adapter stack) are torn down in the
teardown of whichever test runs last, which is usually a 2 s unit test: stopping those processes
on a loaded machine takes longer than that, and a timeout there would leave them unreaped. The
last test therefore gets the teardown budget of the integration fixtures. Under pytest-xdist
every worker has its own session and its own last test, known only when it runs (no next item),
so the budget is added then rather than to the last collected test.
"""

from __future__ import annotations

import os
from collections.abc import Generator

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


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    """Before pytest-timeout arms its timer: this process's last test also tears the session down."""
    if nextitem is None:
        marker = item.get_closest_marker("timeout")
        current = float(marker.args[0]) if marker is not None and marker.args else 0.0
        item.add_marker(pytest.mark.timeout(current + SESSION_TEARDOWN_TIMEOUT_S), append=False)
    return (yield)
