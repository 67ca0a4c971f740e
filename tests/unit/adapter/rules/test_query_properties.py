"""Property tests for the PromQL renderer: whatever text a request carries, the rendered matcher
decodes (as Prometheus's lexer decodes a double-quoted string: Go `strconv.Unquote`) to exactly
that text, and a `=~` matcher built from several names matches exactly those names (Prometheus
anchors regex matchers; the escaped syntax is the common subset of RE2 and Python `re`)."""

from __future__ import annotations

import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapter.rules import gotemplate, query
from adapter.rules.query import build_query
from adapter.rules.template_args import QUERY_FIELDS
from adapter.rules.resources import GroupResource
from kubecommon.selectors import Selector

# Explicit alphabet: ASCII (all RE2 metacharacters, quotes, backslash, controls), DEL, Latin-1,
# BMP symbols, a non-printable format char, a non-BMP emoji and the replacement character.
ALPHABET = string.printable + "\x00\x01\x1b\x7f\x85\xa0é\u2028\u200b\u2603\ufffd\U0001f600"
text = st.text(alphabet=ALPHABET, max_size=20)

_SIMPLE = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
           "\\": "\\", '"': '"', "'": "'"}
_WIDTH = {"x": 2, "u": 4, "U": 8}


def go_unquote(literal: str) -> str:
    """Go `strconv.Unquote` for a double-quoted literal (what PromQL's parser applies); raises
    ValueError where Go returns ErrSyntax."""
    if len(literal) < 2 or literal[0] != '"' or literal[-1] != '"':
        raise ValueError("not a double-quoted literal")
    body, out, i = literal[1:-1], [], 0
    while i < len(body):
        char = body[i]
        if char == '"' or char == "\n":
            raise ValueError(f"unescaped {char!r} inside the literal")
        if char != "\\":
            out.append(char)
            i += 1
            continue
        kind = body[i + 1]
        if kind in _SIMPLE and kind != "'":
            out.append(_SIMPLE[kind])
            i += 2
        elif kind in _WIDTH:
            digits = body[i + 2:i + 2 + _WIDTH[kind]]
            if len(digits) != _WIDTH[kind] or not all(d in string.hexdigits for d in digits):
                raise ValueError("bad hex escape")
            code = int(digits, 16)
            if kind != "x" and (code > 0x10FFFF or 0xD800 <= code <= 0xDFFF):
                raise ValueError("escape is no valid rune")
            out.append(chr(code))
            i += 2 + _WIDTH[kind]
        else:
            raise ValueError(f"unknown escape \\{kind}")
    return "".join(out)


class Identity:
    def label_for(self, resource: GroupResource) -> str:
        return resource.resource


RES = GroupResource("", "pod")
TEMPLATE = gotemplate.parse("<<.LabelMatchers>>", fields=QUERY_FIELDS)
_MATCHER = re.compile(r'^(?P<label>[a-zA-Z_][a-zA-Z0-9_]*)(?P<op>=~|=)(?P<literal>".*")$', re.S)


def render(names: list[str], namespace: str | None = None) -> str:
    return build_query(TEMPLATE, Identity(), series="", metric_selector=Selector.empty(),
                       namespace=namespace, resource=RES, names=names)


def split_matchers(rendered: str) -> list[re.Match[str]]:
    """Split `a="..",b=~".."` at the commas between literals (a comma inside a literal is fine)."""
    parts = re.findall(r'[a-zA-Z_][a-zA-Z0-9_]*=~?"(?:[^"\\]|\\.)*"', rendered, re.S)
    assert ",".join(parts) == rendered, f"matchers do not tile the output: {rendered!r}"
    return [_MATCHER.match(part) for part in parts]  # type: ignore[misc]


@settings(max_examples=200, deadline=None)
@given(name=text, namespace=text.filter(bool))
def test_one_name_and_namespace_decode_to_exactly_the_request_text(name: str, namespace: str) -> None:
    matchers = split_matchers(render([name], namespace))
    assert [(m["label"], m["op"]) for m in matchers] == [("namespaces", "="), ("pod", "=")]
    assert [go_unquote(m["literal"]) for m in matchers] == [namespace, name]


@settings(max_examples=200, deadline=None)
@given(names=st.lists(text, min_size=2, max_size=6, unique=True), probe=text)
def test_name_regex_matches_exactly_the_selected_names(names: list[str], probe: str) -> None:
    (matcher,) = split_matchers(render(names))
    assert matcher["op"] == "=~"
    pattern = re.compile(go_unquote(matcher["literal"]), re.S)  # Prometheus anchors: fullmatch
    for name in names:
        assert pattern.fullmatch(name), name
    assert bool(pattern.fullmatch(probe)) == (probe in names)


@pytest.mark.parametrize("value", [
    pytest.param("a|b", id="alternation"),
    pytest.param("a\nb", id="newline"),
    pytest.param("web-0\n", id="trailing newline ($ matches before it)"),
    pytest.param('"}or vector(1)#', id="quote"),
])
def test_label_values_by_name_checks_every_value_not_the_joined_text(value: str) -> None:
    tmpl = gotemplate.parse('x{pod=~"<<index .LabelValuesByName "pod">>"}', fields=QUERY_FIELDS)
    with pytest.raises(query.InvalidLabelValue):
        build_query(tmpl, Identity(), series="", metric_selector=Selector.empty(), namespace=None,
                    resource=RES, names=[value])


@pytest.mark.parametrize("label", [pytest.param("pod\n", id="trailing newline"), pytest.param("", id="empty")])
def test_a_label_name_with_a_trailing_newline_is_no_label_name(label: str) -> None:
    class Lookup:
        def label_for(self, resource: GroupResource) -> str:
            return label

    with pytest.raises(query.InvalidRuleLabel):
        build_query(TEMPLATE, Lookup(), series="", metric_selector=Selector.empty(), namespace=None,
                    resource=RES, names=["web-0"])
