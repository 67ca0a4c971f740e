"""Label selector parsing and matching, with the cases of apimachinery's labels tests."""

import re

import pytest

from kubecommon.selectors import (
    SelectorError,
    label_selector_from_selector,
    parse_selector,
    selector_from_label_selector,
)

VALID = [
    ("", ""), ("   ", ""), ("a", "a"), ("!a", "!a"), ("a=b", "a=b"), ("a==b", "a==b"), ("a!=b", "a!=b"),
    ("a in (b,c)", "a in (b,c)"), ("a notin (c,b)", "a notin (b,c)"), ("x in (foo,,baz)", "x in (,baz,foo)"),
    ("a in ()", "a in ()"), ("b=1,a=2", "a=2,b=1"), ("a>5", "a>5"), ("a<5", "a<5"),
    ("x in (in,notin)", "x in (in,notin)"), ("a=", "a="), ("a==", "a=="), (" a = b , c ", "a=b,c"),
    ("example.com/app=web", "example.com/app=web"), ("a=b,a=c", "a=b,a=c"),
]


@pytest.mark.parametrize(("text", "canonical"), [pytest.param(t, c, id=repr(t)) for t, c in VALID])
def test_valid_selectors_print_canonically(text: str, canonical: str) -> None:
    assert str(parse_selector(text)) == canonical


INVALID = [
    ("!a=b", "expected: ',' or 'end of string'"), ("a=b,", "identifier after ','"),
    ("a=b c", "found 'c'"), ("a b", "expected: in, notin"), ("a in (b", "expected: ',' or ')'"),
    ("a in b", "expected: '('"), ("a>=5", "must be an integer"), ("a>x", "must be an integer"),
    ("a=b/c", "Invalid value"), ("a=" + "x" * 64, "63 characters"), ('a="b"', "Invalid value"),
    ("}", "Invalid value"), ("a/b/c=d", "at most one '/'"), ("Foo.com/a=b", "subdomain"), ("=b", "identifier"),
    ("a=b)", "found ')'"), ("a=x|y", "Invalid value"), ('a=b"}or{', "Invalid value"),
]


@pytest.mark.parametrize(("text", "message"), [pytest.param(t, m, id=repr(t)) for t, m in INVALID])
def test_invalid_selectors_are_rejected_with_upstream_messages(text: str, message: str) -> None:
    with pytest.raises(SelectorError, match=message.replace("(", r"\(").replace(")", r"\)").replace("|", r"\|")):
        parse_selector(text)


MATCHES = [
    ("a=b", {"a": "b"}, True), ("a=b", {"a": "c"}, False), ("a=b", {}, False),
    ("a!=b", {}, True), ("a!=b", {"a": "b"}, False), ("a in (b,c)", {"a": "c"}, True),
    ("a notin (b,c)", {}, True), ("a notin (b,c)", {"a": "b"}, False), ("a", {"a": ""}, True),
    ("!a", {"a": ""}, False), ("!a", {"b": "x"}, True), ("a>5", {"a": "6"}, True), ("a>5", {"a": "5"}, False),
    ("a<5", {"a": "x"}, False), ("a<5", {}, False), ("", {"any": "thing"}, True), ("a=", {"a": ""}, True),
    ("a=b,c=d", {"a": "b", "c": "d"}, True), ("a=b,c=d", {"a": "b"}, False),
]


@pytest.mark.parametrize(("text", "labels", "expected"),
                         [pytest.param(t, lab, e, id=f"{t!r} on {lab}") for t, lab, e in MATCHES])
def test_matching(text: str, labels: dict[str, str], expected: bool) -> None:
    assert parse_selector(text).matches(labels) is expected


def test_label_selector_objects_round_trip() -> None:
    obj = {"matchLabels": {"app": "web"},
           "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]},
                                {"key": "canary", "operator": "DoesNotExist"}]}
    selector = selector_from_label_selector(obj)
    assert str(selector) == "app=web,!canary,tier in (a,b)"  # requirements sorted by key, as upstream
    assert selector.matches({"app": "web", "tier": "a"})
    assert not selector.matches({"app": "web", "tier": "a", "canary": "1"})
    back = label_selector_from_selector(parse_selector(str(selector)))
    assert selector_from_label_selector(back) == selector


def test_not_equals_becomes_not_in_and_gt_cannot_be_expressed() -> None:
    assert label_selector_from_selector(parse_selector("a!=b")) == {
        "matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["b"]}]}
    assert label_selector_from_selector(parse_selector("a>1")) is None


@pytest.mark.parametrize(("obj", "message"), [
    pytest.param({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
                 "for 'In' operator, values set can't be empty", id="In without values"),
    pytest.param({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]},
                 "values set must be empty for exists and does not exist", id="Exists with values"),
    pytest.param({"matchExpressions": [{"key": "a", "operator": "Bogus"}]},
                 "'Bogus' is not a valid label selector operator", id="unknown operator"),
    pytest.param({"matchLabels": {"a": "b c"}}, "a valid label must be an empty string", id="invalid label value"),
])
def test_invalid_label_selector_objects(obj: dict, message: str) -> None:
    # Each object is wrong in one way; the message must name that way, not some other check.
    with pytest.raises(SelectorError, match=re.escape(message)):
        selector_from_label_selector(obj)
