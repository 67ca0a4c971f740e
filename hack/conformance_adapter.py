"""Adapter conformance: run prometheus-adapter case files against our implementation.

    python hack/conformance.py adapter ../shared/spec/vectors/prometheus-adapter-public.json

Each case is dispatched on its `category` to a checker that drives the real code (rule loading
and compilation, naming, PromQL rendering, discovery's registry, the metrics services) and
compares with `expected`. Output: `PASS id`, `FAIL id: expected ... got ...`, `SKIP id: reason`,
then `N passed, N failed, N skipped`; exit 1 if anything failed.

DEVIATIONS below lists what we deliberately do differently. A failing case is reported as
`SKIP id: deviation <name>: <reason>` only when that deviation's normaliser, applied to our
answer, makes it equal to upstream's — so a deviation can never hide an unrelated bug.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hack import conformance_adapter_cases as cases  # noqa: E402


@dataclass(frozen=True, slots=True)
class Deviation:
    name: str
    reason: str
    normalise: Callable[[str], str]
    """Maps our answer to what upstream would answer if the deviation did not exist."""


def _unescape_regex_values(text: str) -> str:
    """Undo RE2 QuoteMeta inside `=~"..."` / `!~"..."` (PromQL-quoted, so `\\\\.` in the text)."""

    def fix(match: re.Match[str]) -> str:
        return match.group(1) + re.sub(r"\\\\([\\.+*?()|\[\]{}^$])", r"\1", match.group(2)) + '"'

    return re.sub(r'([=!]~")((?:[^"\\]|\\.)*)"', fix, text)


DEVIATIONS: tuple[Deviation, ...] = (
    Deviation(
        name="regex-escaped-values",
        reason="object names and `in`/`notin` selector values are regex-escaped (RE2 QuoteMeta) "
        "inside =~/!~ matchers, so `ip-10-0-0-1.ec2.internal` or `in (a.b)` match only "
        "themselves; upstream pastes them in as raw regex (`.` matches any character).",
        normalise=_unescape_regex_values,
    ),
    Deviation(
        name="label-names-validated",
        reason="a metric-selector key that is not a Prometheus label name (e.g. "
        "`app.kubernetes.io/name`) is rejected with a 400 before querying; upstream sends the "
        "broken PromQL to Prometheus and answers 500/404.",
        normalise=lambda text: text,
    ),
    Deviation(
        name="empty-metric-name-not-served",
        reason="a series whose `name.as` expands to \"\" (e.g. `$1_per_second`) is not registered: "
        "no API path can name it; upstream registers the empty name. Naming itself still "
        "expands to \"\" exactly as Go does (check-config warns about it).",
        normalise=lambda text: text,
    ),
    Deviation(
        name="template-errors-at-load",
        reason="a metricsQuery that can never render (unknown field such as `<<.Foo>>`) fails at "
        "load with the rule named, instead of failing every query at runtime.",
        normalise=lambda text: text,
    ),
    Deviation(
        name="join-template-function",
        reason="templates may use `join` (not a Go builtin) to print a slice with a separator; "
        "upstream would reject such a template at start.",
        normalise=lambda text: text,
    ),
)


def _deviation_for(expected: Any, got: Any) -> Deviation | None:
    if not isinstance(expected, str) or not isinstance(got, str):
        return None
    for deviation in DEVIATIONS:
        if deviation.normalise(got) == expected and got != expected:
            return deviation
    return None


def run(path: Path) -> int:
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    fixtures = data.get("fixtures", {})
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    for case in data.get("cases", []):
        status, message = _run_case(case, fixtures)
        counts[status] += 1
        print(f"{status} {case.get('id', '?')}" + (f": {message}" if message else ""))
    print(f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
    return 1 if counts["FAIL"] else 0


def _run_case(case: Mapping[str, Any], fixtures: Mapping[str, Any]) -> tuple[str, str]:
    checker = cases.CHECKERS.get(case.get("category", ""))
    if checker is None:
        return "SKIP", f"no checker for category {case.get('category')!r}"
    try:
        result = checker(case, fixtures)
    except cases.Unsupported as err:
        return "SKIP", str(err)
    except Exception as err:  # noqa: BLE001 - one broken case must not stop the run
        return "FAIL", f"checker crashed: {type(err).__name__}: {err}"
    if result.ok:
        return "PASS", ""
    deviation = _deviation_for(result.expected, result.got)
    if deviation is not None:
        return "SKIP", f"deviation {deviation.name}: {deviation.reason}"
    return "FAIL", f"expected {result.expected!r} got {result.got!r}"


def _nan_safe(value: Any) -> Any:
    return "NaN" if isinstance(value, float) and math.isnan(value) else value


if __name__ == "__main__":
    sys.exit(run(Path(sys.argv[1])))
