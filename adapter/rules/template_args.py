"""The arguments a `metricsQuery` template reads: prometheus-adapter's `naming.queryTemplateArgs`.

`QUERY_FIELDS` names each field and its kind; a rule's template is checked against it when the rule
compiles (`compile`), and `query_template_args` builds the value each rendered query executes it
with (`query`). Keeping both here lets the compiler and the renderer share the vocabulary without
importing each other.

Non-goals: building the field values (matchers, group-by: `query`), template syntax (`gotemplate`).
Pure; no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from adapter.rules.gotemplate_exec import Struct

__all__ = ["QUERY_FIELDS", "query_template_args"]

QUERY_FIELDS = {"Series": "string", "LabelMatchers": "string", "LabelValuesByName": "map",
                "GroupBy": "string", "GroupBySlice": "list"}  # fmt: skip


def query_template_args(*, series: str, label_matchers: str, values_by_name: Mapping[str, str],
                        group_by: str, group_by_slice: Sequence[str]) -> Struct:
    """The template's root argument, a Go struct: reading a field it lacks is an error."""
    return Struct("naming.queryTemplateArgs", {
        "Series": series, "LabelMatchers": label_matchers, "LabelValuesByName": dict(values_by_name),
        "GroupBy": group_by, "GroupBySlice": group_by_slice,
    })  # fmt: skip
