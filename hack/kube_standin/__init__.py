"""A strict Kubernetes API-server stand-in for development and tests (see `cli` for usage).

Real clients only (kubectl, the `kubernetes` package) talk to it over HTTPS; product code never
knows it exists.
"""
