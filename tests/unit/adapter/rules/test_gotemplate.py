"""The Go text/template subset with << >> delimiters: Go's printing and control semantics."""

from __future__ import annotations

import pytest

from adapter.rules import gotemplate
from adapter.rules.template_args import QUERY_FIELDS, query_template_args

DATA = {
    "Series": "http_requests_total",
    "LabelMatchers": 'namespace="ns",pod=~"a|b"',
    "LabelValuesByName": {"pod": "a|b", "namespace": "ns"},
    "GroupBy": "pod,container",
    "GroupBySlice": ["pod", "container"],
}


def render(text: str, data: dict | None = None) -> str:
    return gotemplate.parse(text, fields=QUERY_FIELDS).render(DATA if data is None else data)


@pytest.mark.parametrize(("template", "expected"), [
    pytest.param("sum(<<.Series>>{<<.LabelMatchers>>}) by (<<.GroupBy>>)",
                 'sum(http_requests_total{namespace="ns",pod=~"a|b"}) by (pod,container)', id="fields"),
    pytest.param("<<.GroupBySlice>>", "[pod container]", id="slice prints like Go"),
    pytest.param("<<.LabelValuesByName>>", "map[namespace:ns pod:a|b]", id="map prints sorted"),
    pytest.param('<<index .LabelValuesByName "pod">>', "a|b", id="index"),
    pytest.param('<<index .LabelValuesByName "nope">>', "", id="index of a missing key is empty"),
    pytest.param("<<.LabelValuesByName.pod>>", "a|b", id="map field access"),
    pytest.param("<<.LabelValuesByName.nope>>", "<no value>", id="missing key by field access"),
    pytest.param("<<index .GroupBySlice 1>>", "container", id="index a slice"),
    pytest.param("<<range $i, $v := .GroupBySlice>><<if $i>>,<<end>><<$v>><<end>>", "pod,container",
                 id="range join idiom"),
    pytest.param("<<range .GroupBySlice>>[<<.>>]<<end>>", "[pod][container]", id="range sets dot"),
    pytest.param("<<range $k, $v := .LabelValuesByName>><<$k>>=<<$v>>;<<end>>", "namespace=ns;pod=a|b;",
                 id="range over map in key order"),
    pytest.param("by (\n  <<- range $i, $v := .GroupBySlice >>\n <<$v>><<end ->>\n)", "by (\n pod\n container)",
                 id="trim markers"),
    pytest.param("<<if eq .Series \"x\">>a<<else if .GroupBy>>b<<else>>c<<end>>", "b", id="else if"),
    pytest.param("<<if and .Series (not .LabelValuesByName.nope)>>yes<<end>>", "yes", id="and/not/parens"),
    pytest.param("<<with .GroupBy>>by (<<.>>)<<end>>", "by (pod,container)", id="with"),
    pytest.param("<<.Series | printf \"%s_sum\">>", "http_requests_total_sum", id="pipeline into printf"),
    pytest.param('<<printf "%q" .Series>>', '"http_requests_total"', id="printf %q"),
    pytest.param("<<len .GroupBySlice>> <<print 1 2>> <<print \"a\" \"b\">>", "2 1 2 ab", id="len and print"),
    pytest.param('<<join .GroupBySlice ",">>', "pod,container", id="join"),
    pytest.param("<<$x := .Series>><<$x = \"y\">><<$x>>", "y", id="variables"),
    pytest.param("a<</* comment */>>b", "ab", id="comment"),
    pytest.param("{{ .Series }} ${.Series}$", "{{ .Series }} ${.Series}$", id="other delimiters are text"),
    pytest.param('<<"a>>b">>', "a>>b", id="delimiter inside a string literal"),
])
def test_rendering(template: str, expected: str) -> None:
    assert render(template) == expected


@pytest.mark.parametrize(("template", "message"), [
    pytest.param("<<.Foo>>", "can't evaluate field Foo", id="unknown root field"),
    pytest.param("<<$.Foo>>", "can't evaluate field Foo", id="unknown field through $"),
    pytest.param("<<.Series.Name>>", "can't evaluate field Name in .Series", id="field of a string"),
    pytest.param("<<if .Series>>", "missing <<end>>", id="missing end"),
    pytest.param("<<end>>", "unexpected <<end>>", id="stray end"),
    pytest.param("<<else>>", "unexpected <<else>>", id="stray else"),
    pytest.param("<<.Series", "unclosed action", id="unclosed action"),
    pytest.param("<<split .Series>>", 'function "split" not defined', id="unknown function"),
    pytest.param('<<template "x">>', "not supported", id="template action"),
    pytest.param("<<.Series .GroupBy>>", "can't give argument to non-function", id="argument to a field"),
    pytest.param("<<>>", "missing value", id="empty action"),
    pytest.param("<<.Series @>>", "unexpected '@'", id="bad character"),
])
def test_parse_errors(template: str, message: str) -> None:
    with pytest.raises(gotemplate.TemplateSyntaxError, match=message):
        gotemplate.parse(template, fields=QUERY_FIELDS)


@pytest.mark.parametrize(("template", "message"), [
    pytest.param("<<range .Series>>x<<else>>none<<end>>", "range can't iterate", id="range over a string"),
    pytest.param("<<range .GroupBySlice>><<.Foo>><<end>>", "can't evaluate field Foo",
                 id="inside range fields refer to the element"),
])
def test_errors_the_static_field_check_cannot_see_fail_at_render(template: str, message: str) -> None:
    with pytest.raises(gotemplate.TemplateExecError, match=message):
        render(template)


@pytest.mark.parametrize("template", [
    pytest.param("<<.>>", id="dot"), pytest.param('<<printf "%v" .>>', id="printf %v"),
    pytest.param("<<print $>>", id="print dollar"),
])
def test_the_root_struct_prints_as_go_prints_a_struct(template: str) -> None:
    """fmt.Sprint of a struct: `{field field ...}` in declaration order, as Go's template does."""
    args = query_template_args(series="up", label_matchers='pod="a"', values_by_name={"pod": "a"},
                               group_by="pod", group_by_slice=["pod"])
    assert gotemplate.parse(template).render(args) == '{up pod="a" map[pod:a] pod [pod]}'  # type: ignore[arg-type]


@pytest.mark.parametrize("template", [
    pytest.param("<<with .>><<.Series>><<end>>", id="with dot"),
    pytest.param("<<$r := .>><<$r.Series>>", id="root in a variable"),
    pytest.param("<<with .GroupBy>><<with $>><<.Series>><<end>><<end>>", id="dollar inside with"),
    pytest.param("<<.>>", id="dot printed"),
])
def test_a_template_handing_on_the_whole_root_may_read_every_field(template: str) -> None:
    parsed = gotemplate.parse(template, fields=QUERY_FIELDS)
    assert all(parsed.references(name) for name in QUERY_FIELDS)


def test_references_and_index_keys_are_reported() -> None:
    template = gotemplate.parse('x{p="<<index .LabelValuesByName "pod">>",n="<<.LabelValuesByName.ns>>"}')
    assert template.references("LabelValuesByName") and not template.references("Series")
    assert template.index_keys("LabelValuesByName") == ("pod", "ns")
    assert gotemplate.parse("plain text").is_constant
