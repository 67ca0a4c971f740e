"""The running stack the demo, benchmarks and end-to-end tests start: child processes and their logs,
a private Prometheus, the sample exporter, the adapter and the API-server stand-in, the controller
stack with its recording API proxy, and a backfilled Prometheus holding a known history.

Non-goals: the demo's story (hack.demo), conformance cases (hack.conformance), measurements
(hack.bench); nothing here imports those rooms.
"""
