"""Field selector parsing and matching (the `fieldSelector` of list requests)."""

import pytest

from kubecommon.fieldselectors import parse_field_selector
from kubecommon.selectors import SelectorError


def test_field_selectors() -> None:
    selector = parse_field_selector("metadata.name=web-0,status.phase!=Failed")
    assert selector.matches({"metadata.name": "web-0", "status.phase": "Running"})
    assert not selector.matches({"metadata.name": "web-0", "status.phase": "Failed"})
    assert selector.value_for("metadata.name") == "web-0"
    assert parse_field_selector(r"metadata.name=a\,b").value_for("metadata.name") == "a,b"
    with pytest.raises(SelectorError):
        parse_field_selector("metadata.name")
