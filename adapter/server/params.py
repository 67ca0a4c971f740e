"""Query parameters of the metrics APIs, parsed for the handlers: `labelSelector`,
`metricLabelSelector` and `fieldSelector`.

An absent or empty parameter means "everything"; text that does not parse is the client's mistake
and becomes the services' `BadSelector` (400 with the parser's text, as upstream).

Non-goals: path parsing (each handler owns its paths), selector semantics (`kubecommon.selectors`,
`kubecommon.fieldselectors`).
"""

from __future__ import annotations

from adapter.services.errors import BadSelector
from kubecommon.fieldselectors import FieldSelector, parse_field_selector
from kubecommon.selectors import Selector, SelectorError, parse_selector

__all__ = ["parse_field_selector_param", "parse_selector_param"]


def parse_selector_param(text: str | None) -> Selector:
    """Parse a label selector query parameter; absent or empty means "everything"."""
    if not text:
        return Selector.empty()
    try:
        return parse_selector(text)
    except SelectorError as err:
        raise BadSelector(str(err)) from None  # upstream returns the parser text as is


def parse_field_selector_param(text: str | None) -> FieldSelector | None:
    """Parse a `fieldSelector` query parameter; absent or empty means no field selection."""
    if not text:
        return None
    try:
        return parse_field_selector(text)
    except SelectorError as err:
        raise BadSelector(str(err)) from None
