"""Go `regexp` (RE2) patterns in Python, and Go's `Regexp.ExpandString`.

Job: compile the regexes users wrote for prometheus-adapter (`name.matches`, `seriesFilters`)
so they match what Go matches, and expand `name.as` with Go's rules — which differ from Python's:
`$name` takes the longest run of letters, digits and `_` (so `$1_total` is the group named
`1_total`, which does not exist, and expands to ""), `${1}` is group 1, `$$` is `$`, a missing or
unmatched group expands to "", and a malformed `$` stays literal. Translation: `(?<name>` and
`\\z` are rewritten to Python's spelling, POSIX classes `[[:alpha:]]` are expanded, `\\Q...\\E` is
quoted; constructs RE2 rejects (backreferences, lookaround, atomic groups, possessive
quantifiers) are rejected here too. Non-goals: Unicode classes `\\p{..}` (rejected with a clear
message), RE2's linear-time guarantee (patterns come from the operator's config, not requests).
"""

from __future__ import annotations

import re
import warnings

__all__ = ["RegexError", "compile_re2", "expand", "quote_meta"]


class RegexError(ValueError):
    """The pattern is not a valid Go regexp (or uses a feature we cannot reproduce)."""


_POSIX = {
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "ascii": "\\x00-\\x7f", "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f", "digit": "0-9", "graph": "!-~", "lower": "a-z",
    "print": " -~", "punct": "!-/:-@\\[-`{-~", "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z", "word": "0-9A-Za-z_", "xdigit": "0-9A-Fa-f",
}  # fmt: skip
_REJECT = [
    (re.compile(r"\\[1-9]"), "backreferences (\\1) are not supported by Go regexp"),
    (re.compile(r"\(\?P="), "named backreferences are not supported by Go regexp"),
    (re.compile(r"\(\?<?[=!]"), "lookaround assertions are not supported by Go regexp"),
    (re.compile(r"\(\?>"), "atomic groups are not supported by Go regexp"),
    (re.compile(r"[*+?}][+]"), "possessive quantifiers are not supported by Go regexp"),
    (re.compile(r"\\[pP]"), "Unicode classes (\\p{...}) are not supported here"),
    (re.compile(r"\(\?#"), "comments (?#...) are not supported by Go regexp"),
]
# `(?` forms RE2 accepts: non-capturing, named groups, and i/m/s flags (U, ungreedy, has no
# Python equivalent and is rejected rather than silently matching differently).
_GROUP_OPENERS = re.compile(r"(?<!\\)\(\?(?!:|P<|<(?![=!])|-?[ims]+(?:-[ims]+)?[:)]|[ims]*-[ims]+[:)])")


# A multi-line flag anywhere: `$` keeps Python's end-of-line meaning, which is RE2's under (?m).
_MULTILINE_FLAG = re.compile(r"\(\?[ims]*m[ims]*(?:-[ims]*)?[:)]")


def _translate(pattern: str) -> str:
    out: list[str] = []
    i = 0
    # RE2's `$` (without m) is the end of the text; Python's also matches before a final "\n".
    end_of_text = "$" if _MULTILINE_FLAG.search(pattern) else "\\Z"
    class_first = -1  # index of the first character inside the open `[...]`, -1 outside one
    while i < len(pattern):
        if pattern.startswith("\\Q", i):
            end = pattern.find("\\E", i + 2)
            literal = pattern[i + 2 : end if end >= 0 else len(pattern)]
            out.append(re.escape(literal))
            i = end + 2 if end >= 0 else len(pattern)
        elif pattern.startswith("\\z", i):
            out.append("\\Z")
            i += 2
        elif pattern[i] == "\\" and i + 1 < len(pattern):
            out.append(pattern[i : i + 2])
            i += 2
        elif pattern.startswith("(?<", i) and pattern[i + 3 : i + 4] not in ("=", "!"):
            out.append("(?P<")
            i += 3
        elif pattern.startswith("[:", i) and (end := pattern.find(":]", i)) > 0:
            name = pattern[i + 2 : end]
            negate = name.startswith("^")
            cls = _POSIX.get(name.lstrip("^"))
            if cls is None or negate:
                raise RegexError(f"invalid character class range: [:{name}:]")
            out.append(cls)
            i = end + 2
        else:
            char = pattern[i]
            if class_first >= 0:
                if char == "]" and i > class_first:  # a `]` right after `[` or `[^` is literal
                    class_first = -1
            elif char == "[":
                class_first = i + 2 if pattern[i + 1 : i + 2] == "^" else i + 1
            elif char == "$":
                char = end_of_text
            out.append(char)
            i += 1
    return "".join(out)


def compile_re2(pattern: str) -> re.Pattern[str]:
    """Compile a Go regexp for Python's `re`, or raise RegexError with the reason."""
    for check, reason in _REJECT:
        if check.search(pattern):
            raise RegexError(f"error parsing regexp {pattern!r}: {reason}")
    if _GROUP_OPENERS.search(pattern):
        raise RegexError(f"error parsing regexp {pattern!r}: invalid or unsupported Perl syntax `(?`"
                         " (Go accepts (?:...), (?P<name>...), (?<name>...) and the flags i, m, s)")
    try:
        translated = _translate(pattern)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # e.g. "possible nested set" means a non-RE2 construct
            return re.compile(translated)
    except (re.error, FutureWarning, RegexError) as err:
        raise RegexError(f"error parsing regexp {pattern!r}: {err}") from None


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


def expand(template: str, pattern: re.Pattern[str], match: re.Match[str]) -> str:
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
            out.append(match.group(num))
    out.append(template)
    return "".join(out)


_META = re.compile(r"([\\.+*?()|\[\]{}^$])")


def quote_meta(text: str) -> str:
    """Go `regexp.QuoteMeta`: escape exactly RE2's metacharacters (not `-`, `/`, ...)."""
    return _META.sub(r"\\\1", text)
