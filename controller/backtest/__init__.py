"""Backtest: replay an autoscaler spec against Prometheus history with the live decision code.

`controller.history` (metric -> the adapter's PromQL; series discovery, chunked concurrent range
queries; folding, shared with the live controller) -> model (the counterfactual load model,
stated) -> simulate (`decide`/`complete` sync by sync on the simulated clock) -> summary -> report
(text), report_data (JSON, CSV), report_html (inline SVG).
Entry point: `cli.main(argv) -> int`.
"""
