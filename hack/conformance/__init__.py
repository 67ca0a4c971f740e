"""Conformance runners: language-neutral case files (../shared/spec/vectors) replayed against the
real adapter and controller code. One entry (cli), one case loop (runner), one table of deliberate
deviations from upstream (deviations), then per component a runner (adapter_runner,
controller_runner) and one module per family of cases (adapter_rules, adapter_registry,
adapter_services, adapter_flags, adapter_client; controller_cases, controller_reconcile).

Non-goals: starting processes (hack.stack), speed (hack.bench).
"""
