"""The rule file: prometheus-adapter-compatible schema (`model`) and its strict loader (`load`).

Pure except `load_config`, which reads the one file it is given.
"""

from adapter.config.errors import ConfigError, Problem
from adapter.config.load import load_config, parse_config
from adapter.config.model import (
    AdapterConfig,
    DiscoveryRule,
    GroupResourceRef,
    LabelOverride,
    NameMapping,
    RegexFilter,
    ResourceMapping,
    ResourceRule,
    ResourceRules,
)

__all__ = [
    "AdapterConfig",
    "ConfigError",
    "DiscoveryRule",
    "GroupResourceRef",
    "LabelOverride",
    "NameMapping",
    "Problem",
    "RegexFilter",
    "ResourceMapping",
    "ResourceRule",
    "ResourceRules",
    "load_config",
    "parse_config",
]
