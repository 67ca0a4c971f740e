"""Backtest: replay an autoscaler spec against Prometheus history with the live decision code.

history (I/O: series discovery, chunked concurrent range queries) -> model (the counterfactual
load model, stated) -> simulate (`decide`/`complete` sync by sync on the simulated clock) ->
summary -> report (text), report_data (JSON, CSV), report_html (inline SVG). `resolve` turns each
metric into the PromQL the adapter would run, through the adapter's own rule engine
(`adapter.config`, `adapter.rules`: the one place the controller may import the adapter).
Entry point: `cli.main(argv) -> int`.
"""
