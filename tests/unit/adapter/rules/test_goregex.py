"""Go regexp semantics through RE2: what Go accepts and rejects, ExpandString, QuoteMeta."""

from __future__ import annotations

import pytest

from adapter.rules.goregex import RegexError, compile_re2, expand, quote_meta


@pytest.mark.parametrize(("pattern", "text", "template", "expected"), [
    pytest.param(r"(\w+)@(\w+)", "bob@example", "$2/$1", "example/bob", id="numbered"),
    pytest.param(r"(\w+)@(\w+)", "bob@example", "${1}x", "bobx", id="braced"),
    pytest.param(r"(\w+)@(\w+)", "bob@example", "$1x", "", id="longest name"),
    pytest.param(r"(?P<user>\w+)@", "bob@", "<$user>", "<bob>", id="named"),
    pytest.param(r"(?<user>\w+)@", "bob@", "${user}", "bob", id="Go 1.22 named group syntax"),
    pytest.param(r"a", "a", "$$1", "$1", id="dollar dollar"),
    pytest.param(r"a", "a", "x$", "x$", id="trailing dollar"),
    pytest.param(r"a", "a", "${1", "${1", id="unclosed brace is literal"),
    pytest.param(r"(a)|(b)", "b", "[$1][$2]", "[][b]", id="unmatched group is empty"),
    pytest.param(r"a", "a", "$9", "", id="group beyond count is empty"),
    pytest.param(r"(a)", "a", "$01", "", id="leading zero is a name"),
])
def test_expand_follows_go(pattern: str, text: str, template: str, expected: str) -> None:
    compiled = compile_re2(pattern)
    match = compiled.search(text)
    assert match is not None
    assert expand(template, compiled, match) == expected


@pytest.mark.parametrize(("pattern", "text", "matches"), [
    pytest.param("[[:alpha:]]+$", "abc", True, id="posix class"),
    pytest.param("[[:digit:]]", "abc", False, id="posix digit"),
    pytest.param(r"\Qa.b\E", "axb", False, id="quoted literal"),
    pytest.param(r"\Qa.b\E", "a.b", True, id="quoted literal matches itself"),
    pytest.param(r"abc\z", "abc", True, id="end of text"),
    pytest.param("(?i)ABC", "abc", True, id="case-insensitive flag"),
    pytest.param("(?s:a.b)", "a\nb", True, id="flag group"),
])
def test_re2_syntax_matches_as_in_go(pattern: str, text: str, matches: bool) -> None:
    assert (compile_re2(pattern).search(text) is not None) == matches


@pytest.mark.parametrize("pattern", [
    pytest.param(r"(a)\1", id="backreference"), pytest.param("(?=a)", id="lookahead"),
    pytest.param("(?<!a)b", id="lookbehind"), pytest.param("(?>a)", id="atomic"),
    pytest.param("a++", id="possessive"), pytest.param(r"a\Cb", id="any byte (RE2 has it, Go does not)"),
    pytest.param("(", id="unbalanced"), pytest.param("[[:nope:]]", id="unknown posix class"),
    pytest.param("(?#note)a", id="comment group"), pytest.param("(?x) a b", id="verbose flag"),
])
def test_non_re2_patterns_are_rejected(pattern: str) -> None:
    with pytest.raises(RegexError, match="error parsing regexp"):
        compile_re2(pattern)


def test_quote_meta_escapes_exactly_re2_metacharacters() -> None:
    assert quote_meta(r"a.b+c*d?e(f)g|h[i]j{k}l^m$n\o-p/q") == r"a\.b\+c\*d\?e\(f\)g\|h\[i\]j\{k\}l\^m\$n\\o-p/q"


@pytest.mark.parametrize("pattern, text, matches", [
    pytest.param("^(.*)_total$", "x_total\n", False, id="$ is the end of the text, not before a final newline"),
    pytest.param("^(.*)_total$", "x_total", True, id="$ at the end"),
    pytest.param("a[$]b", "a$b", True, id="$ in a class is literal"),
    pytest.param("[]$]", "$", True, id="] first in a class is literal, $ still in the class"),
    pytest.param(r"a\$", "a$", True, id="escaped $"),
    pytest.param("(?m)a$", "a\nb", True, id="multi-line flag: end of line, as RE2"),
])
def test_dollar_means_what_it_means_in_re2(pattern: str, text: str, matches: bool) -> None:
    assert bool(compile_re2(pattern).search(text)) is matches


# Go regexp cases (regexp/syntax and regexp tests): patterns the old translation to Python's `re`
# refused or read differently, with the match Go reports (None: no match).
@pytest.mark.parametrize(("pattern", "text", "expected"), [
    pytest.param(r"\p{L}+", "héllo_1", "héllo", id="unicode letter class"),
    pytest.param(r"\pL+", "Ωmega9", "Ωmega", id="one-letter unicode class"),
    pytest.param(r"\P{L}+", "ab12cd", "12", id="negated unicode class"),
    pytest.param(r"\p{Greek}+", "abγδε", "γδε", id="unicode script"),
    pytest.param(r"[\p{Lu}]+", "abCDe", "CD", id="unicode class inside brackets"),
    pytest.param("(?U)a+", "aaa", "a", id="ungreedy flag"),
    pytest.param("(?U)a+?", "aaa", "aaa", id="ungreedy flag swaps lazy and greedy"),
    pytest.param("a$", "a\n", None, id="dollar is end of text"),
    pytest.param("(?m)a$", "a\n", "a", id="multiline dollar is end of line"),
    pytest.param(r"^\x{41}", "AB", "A", id="hex escape with braces"),
    pytest.param(r"[[:^digit:]]+", "12ab3", "ab", id="negated posix class"),
    pytest.param(r"\\C", "a\\C", "\\C", id="escaped backslash before C is a literal"),
])
def test_go_regexp_cases(pattern: str, text: str, expected: str | None) -> None:
    match = compile_re2(pattern).search(text)
    assert (None if match is None else match.group(0)) == expected


def test_linear_time_on_a_pattern_that_backtracks_exponentially_in_python_re() -> None:
    """(a+)+$ against 'aaaa…b' takes exponential time in backtracking engines; RE2 is linear."""
    assert compile_re2("(a+)+$").search("a" * 5000 + "b") is None
