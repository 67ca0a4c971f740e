"""The workshop: development tools beside the product (conformance runners, API-server stand-in, demo, bench)."""
