"""Root test configuration: shared fixtures live in tests/fixtures/ as pytest plugins."""

pytest_plugins = [
    "tests.fixtures.prometheus",
    "tests.fixtures.standin",
    "tests.fixtures.adapter",
]
