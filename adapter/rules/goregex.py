"""Go `regexp` (RE2) patterns through Google's RE2, and Go's `Regexp.ExpandString`.

Job: compile the regexes users wrote for prometheus-adapter (`name.matches`, `seriesFilters`,
the label template's extractor) with `google-re2`, Google's own binding of the RE2 library that
Go's `regexp` implements: every pattern Go accepts is accepted with Go's meaning (Unicode classes
`\\p{L}`, `(?U)`, `\\Q...\\E`, POSIX classes, `$` as end of text) and matched in linear time;
what Go rejects (backreferences, lookaround, possessive quantifiers, `(?x)`) RE2 rejects too.
What the library does not do is kept here: Go's `ExpandString` rules for `name.as`, which differ
from Python's (`$name` takes the longest run of letters, digits and `_`, so `$1_total` is the
group named `1_total`, which does not exist, and expands to ""; `${1}` is group 1; `$$` is `$`;
a missing or unmatched group expands to ""; a malformed `$` stays literal), and `QuoteMeta`.

Non-goals: Go's exact error wording beyond the `error parsing regexp` prefix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Protocol, cast

import re2  # type: ignore[import-untyped]

__all__ = ["GoMatch", "GoPattern", "RegexError", "compile_re2", "expand", "quote_meta"]


class RegexError(ValueError):
    """The pattern is not a valid Go regexp."""


class GoMatch(Protocol):
    """The part of an RE2 match the rule engine reads."""

    def group(self, index: int | str = 0, /) -> str | None: ...

    def start(self, index: int = 0, /) -> int: ...

    def groupdict(self) -> dict[str, str | None]: ...


class GoPattern(Protocol):
    """A compiled Go regexp: unanchored `search`, anchored-at-start `match`."""

    @property
    def groups(self) -> int: ...

    @property
    def groupindex(self) -> Mapping[str, int]: ...

    def search(self, text: str, /) -> GoMatch | None: ...

    def match(self, text: str, /) -> GoMatch | None: ...


# `\C` (any byte) is the one construct C++ RE2 accepts and Go's regexp does not.
_ANY_BYTE = re.compile(r"(?<!\\)(?:\\\\)*\\C")


def compile_re2(pattern: str) -> GoPattern:
    """Compile a Go regexp with RE2, or raise RegexError with RE2's reason."""
    if _ANY_BYTE.search(pattern):
        raise RegexError(f"error parsing regexp {pattern!r}: invalid escape sequence: \\C")
    options = re2.Options()
    options.log_errors = False  # the error is ours to report (with file, rule and field)
    try:
        return cast(GoPattern, re2.compile(pattern, options))
    except re2.error as err:
        reason = err.args[0].decode() if err.args and isinstance(err.args[0], bytes) else str(err)
        raise RegexError(f"error parsing regexp {pattern!r}: {reason}") from None


def _extract(text: str) -> tuple[str, int, str] | None:
    """Go regexp `extract`: the name after `$` (braced or not), its group number or -1, rest."""
    brace = text.startswith("{")
    body = text[1:] if brace else text
    i = 0
    while i < len(body) and (body[i].isalnum() or body[i] == "_"):
        i += 1
    if i == 0:
        return None
    name = body[:i]
    if brace:
        if i >= len(body) or body[i] != "}":
            return None
        i += 1
    num = int(name) if name.isdigit() and name.isascii() and len(name) < 9 else -1
    if name[0] == "0" and len(name) > 1:
        num = -1  # leading zeros are a name, not a number
    return name, num, body[i:]


def expand(template: str, pattern: GoPattern, match: GoMatch) -> str:
    """Go `Regexp.ExpandString(nil, template, src, match)`."""
    out: list[str] = []
    while template:
        before, dollar, after = template.partition("$")
        if not dollar:
            break
        out.append(before)
        template = after
        if template.startswith("$"):
            out.append("$")
            template = template[1:]
            continue
        extracted = _extract(template)
        if extracted is None:
            out.append("$")  # malformed: the `$` stays literal
            continue
        name, num, template = extracted
        if num < 0:
            num = pattern.groupindex.get(name, -1)
        if 0 <= num <= pattern.groups and match.start(num) >= 0:
            out.append(match.group(num) or "")
    out.append(template)
    return "".join(out)


_META = re.compile(r"([\\.+*?()|\[\]{}^$])")


def quote_meta(text: str) -> str:
    """Go `regexp.QuoteMeta`: escape exactly RE2's metacharacters (not `-`, `/`, ...)."""
    return _META.sub(r"\\\1", text)
