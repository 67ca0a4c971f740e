"""Compiled rules: series filters, metric naming, resource <-> label mapping, PromQL rendering.

`compile.compile_config(AdapterConfig) -> CompiledConfig` once at start; `query.render_*` per
request (the only place request text meets PromQL); `lint.lint_config` for check-config warnings.
`template_args` holds the metricsQuery arguments both compile and query use; `gotemplate` (with
`gotemplate_exec`, `gotemplate_nodes`) and `goregex` reproduce Go's template and regexp behaviour.
Pure: no I/O, no clock.
"""

from adapter.rules.compile import (
    CompiledConfig,
    CompiledResourceQuery,
    CompiledResourceRules,
    CompiledRule,
    RuleKind,
    RuleRef,
    compile_config,
)
from adapter.rules.resources import GroupResource, ResourceTable

__all__ = [
    "CompiledConfig",
    "CompiledResourceQuery",
    "CompiledResourceRules",
    "CompiledRule",
    "GroupResource",
    "ResourceTable",
    "RuleKind",
    "RuleRef",
    "compile_config",
]
