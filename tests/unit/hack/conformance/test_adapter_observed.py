"""The table of what each adapter case family is observed as, and its copy in the docs."""

from __future__ import annotations

from hack.conformance import adapter_compare, adapter_observed
from tests import paths


def test_the_development_page_shows_the_runners_table_as_it_is() -> None:
    page = (paths.REPO / "docs" / "development.md").read_text()
    assert adapter_observed.markdown() in page, "regenerate the table: python -c 'from hack.conformance." \
        "adapter_observed import markdown; print(markdown())'"


def test_every_family_has_a_row_and_every_row_names_only_vocabulary_fields() -> None:
    # the families are FIELDS.md's categories: test_field_rules.test_the_vocabulary_is_fields_md
    table = adapter_observed.markdown().splitlines()
    assert len(table) == 2 + len(adapter_observed.OBSERVED) == 2 + 28
    for fields in adapter_observed.OBSERVED.values():
        assert len(set(fields)) == len(fields)
        assert set(fields) <= adapter_compare.EXPECTED_FIELDS - adapter_compare.PROVENANCE_FIELDS
