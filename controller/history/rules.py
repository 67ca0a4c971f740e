"""The adapter's rule file as the controller reads it: the one door from `controller` into `adapter`.

The controller's history (live and backtest) resolves each metric to the PromQL the adapter runs,
so it loads and compiles the same rule file with the adapter's own pure engine (`adapter.config`,
`adapter.rules`). Everything the controller needs of it comes through here (with `resolve`), so
import-linter can keep the exception to `controller.history`.

Non-goals: rendering queries (`resolve`). Reads the one file it is given; no network, no clock.
"""

from __future__ import annotations

from adapter.config import ConfigError, load_config
from adapter.config.load import parse_duration
from adapter.rules import compile_config
from adapter.rules.compile import CompiledConfig

__all__ = ["CompiledConfig", "ConfigError", "load_rules", "parse_duration"]


def load_rules(path: str) -> CompiledConfig:
    """The rule file at `path`, compiled; `ConfigError` names the file, the rule and the field at fault.
    (`parse_duration` is re-exported for Prometheus-style durations such as `now-7d` in the backtest's flags.)"""
    return compile_config(load_config(path))
