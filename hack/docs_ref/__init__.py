"""The generated reference pages of the docs site (docs/reference/): the chart's values from the
comments in values.yaml (checked against values.schema.json), both binaries' flags from their
argument parsers, and the PromAutoscaler fields from the CRD schema. `make docs-ref` writes them,
`python -m hack.docs_ref --check` (and tests/unit/hack/docs_ref/) fails when one is stale.
Non-goal: prose; every hand-written page lives under docs/ and is built by mkdocs.
"""
