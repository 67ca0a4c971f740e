"""Root test configuration: shared fixtures live in tests/fixtures/ as pytest plugins.

Property tests (hypothesis) explore many examples per test and, on a fresh machine, first build
hypothesis' character tables; the 2 s per-test limit is for example-based unit tests, so property
tests get a longer one, and no per-example deadline (a loaded CI machine must not turn a slow
example into a failure). Under CI they are derandomized so a run is reproducible.
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

settings.register_profile("project", deadline=None, derandomize=bool(os.environ.get("CI")))
settings.load_profile("project")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        function = getattr(item, "function", None)
        if getattr(function, "is_hypothesis_test", False) and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(PROPERTY_TEST_TIMEOUT_S))
