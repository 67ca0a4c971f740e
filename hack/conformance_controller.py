"""Conformance runner for the controller: replays `hpa*.json` vector cases against
`controller.algorithm` (called by `python hack/conformance.py controller FILE.json`).

Each case kind maps onto the pure function reproducing the upstream function it was taken from
(`conformance_controller_cases.py`); `controller_reconcile` cases replay one whole
`reconcileAutoscaler()` pass with `conformance_controller_reconcile.py` as the I/O shell. Vector
conventions (the file's `conventions` block): instants are seconds relative to now=0, "zero" is
Go's zero time, windows are strict.

Output: `PASS id`, `FAIL id: expected ... got ...`, `SKIP id: reason`; then
`N passed, N failed, N skipped`; exit 1 if anything failed. Nothing passes silently: an unknown
case kind, an input field this runner does not honour (`conformance_controller_schema.py`), an
expected field it cannot check, a malformed case or a crash while replaying it is a FAIL with
the reason; an unreadable file is one FAIL. SKIP is used only for the deliberate deviations
listed in `DEVIATIONS`, with their reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from controller.algorithm.errors import MetricError
from hack.conformance_controller_cases import GO_ZERO_TIME, HANDLERS, CaseError, Json, t
from hack.conformance_controller_reconcile import reconcile
from hack.conformance_controller_schema import unknown_case_keys, unknown_fields

# Deliberate deviations from upstream that a vector case encodes: case id -> reason. A listed
# case is reported as SKIP with its reason, never skipped silently. None today: every public case
# reproduces upstream exactly.
DEVIATIONS: dict[str, str] = {}

# Deliberate deviations that no public vector exercises, documented here for reviewers:
NOT_ENCODED_DEVIATIONS: tuple[str, ...] = (
    "Object/External AverageValue with status.replicas == 0: upstream divides by zero (+Inf/NaN "
    "into int64); we treat the ratio as +Inf (never within tolerance) and report the total as "
    "the average.",
    "A zero or negative target (API validation forbids it) is a metric error here instead of a "
    "division by zero.",
    "An autoscaler with no metrics (API defaulting adds cpu 80%) reports "
    "ScalingActive=False/InvalidMetricSourceType; upstream sets an empty condition.",
    "Message wording of the ambiguous-selector condition lists HPAs as namespace/name, and the "
    "object-metric fetch error reads 'unable to get metric M on Kind name: err' (upstream's "
    "format arguments are out of order).",
    "Window boundaries: a sample exactly W seconds old is outside every window (legacy "
    "stabilization included), the convention of the vectors; upstream's legacy path compares "
    "with Before(cutoff), which differs only at the same nanosecond.",
)

HANDLERS_BY_KIND = {**HANDLERS, "controller_reconcile": reconcile}


def _normal(key: str, value: Any) -> Any:
    if key == "timestamp":
        return GO_ZERO_TIME if value in (None, "zero") else t(value)
    if key.endswith("_pods") and isinstance(value, list):
        return sorted(value)
    return value


def _project(want: Any, got: Any) -> Any:
    """Compare lists of objects on the fields the vector states (e.g. conditions without
    messages, events without messages); everything else must match as a whole."""
    if (isinstance(want, list) and isinstance(got, list) and len(want) == len(got)
            and all(isinstance(w, dict) and isinstance(g, dict) for w, g in zip(want, got, strict=True))):  # fmt: skip
        return [{k: g.get(k) for k in w} for w, g in zip(want, got, strict=True)]
    return got


def _malformed(case: Any) -> str | None:
    """Why a case cannot be replayed at all (None if it is well formed)."""
    if not isinstance(case, dict):
        return f"a case object got {type(case).__name__}"
    extra = unknown_case_keys(case)
    if extra:
        return f"known case keys got unknown key(s) {extra}"
    kind = case.get("kind")
    if not isinstance(kind, str) or kind not in HANDLERS_BY_KIND:
        return f"a known case kind ({', '.join(sorted(HANDLERS_BY_KIND))}) got {kind!r}"
    if not isinstance(case.get("inputs"), dict) or not isinstance(case.get("expected"), dict):
        return "inputs and expected objects got " + json.dumps({k: type(case.get(k)).__name__
                                                                 for k in ("inputs", "expected")})  # fmt: skip
    if not case["expected"]:
        return "at least one expected field got none (a case that asserts nothing cannot pass)"
    fields = unknown_fields(kind, case["inputs"])
    if fields:
        return f"input fields this runner honours got unknown field(s) {fields}"
    return None


def _compare_error(expected: Json, error: str) -> list[str]:
    if "error" not in expected:
        return [f"expected {json.dumps(expected)} got error {error}"]
    want = str(expected["error"])
    # Upstream asserts that the error *contains* the expected text (assert.ErrorContains).
    return [] if want and want in error else [f"expected error containing {want!r} got error {error!r}"]


def check(case: Json) -> list[str]:
    """Mismatches for one case (empty: pass). The case must be well formed (see `_malformed`)."""
    expected: Json = case["expected"]
    try:
        got = HANDLERS_BY_KIND[case["kind"]](case["inputs"])
    except MetricError as e:
        return _compare_error(expected, str(e))
    if "error" in expected:
        return [f"expected error {expected['error']!r} got {json.dumps(got, default=str)}"]
    problems = []
    for key, want in expected.items():
        if key not in got:
            problems.append(f"expected {key}={json.dumps(want)} got <a field this runner cannot check>")
        elif _normal(key, want) != _normal(key, _project(want, got[key])):
            problems.append(f"expected {key}={json.dumps(want)} got {json.dumps(got[key], default=str)}")
    return problems


def case_outcome(case: Any, index: int, seen: set[str]) -> tuple[str, str, str]:
    """(verdict, case id, detail) for one case; never raises."""
    cid = case.get("id") if isinstance(case, dict) else None
    if not isinstance(cid, str) or not cid:
        return "FAIL", f"<case-{index}>", f"expected a non-empty string id got {cid!r}"
    if cid in seen:
        return "FAIL", cid, "expected a unique case id got a duplicate"
    seen.add(cid)
    if cid in DEVIATIONS:
        return "SKIP", cid, f"deliberate deviation: {DEVIATIONS[cid]}"
    try:
        why = _malformed(case)
        if why is not None:
            return "FAIL", cid, f"expected {why}"
        problems = check(case)
    except CaseError as e:
        problems = [f"expected a case this runner can replay got {e}"]
    except Exception as e:  # a crash fails that case, not the whole run
        problems = [f"expected {json.dumps(case['expected'], default=str)} got {type(e).__name__}: {e}"]
    return ("FAIL", cid, "; ".join(problems)) if problems else ("PASS", cid, "")


def _load(path: Path) -> tuple[list[Any] | None, str]:
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        return None, f"expected a readable JSON case file got {type(e).__name__}: {e}"
    cases = data.get("cases") if isinstance(data, dict) else None
    if not isinstance(cases, list):
        return None, "expected an object with a 'cases' list got " + type(cases).__name__
    return cases, ""


def run(path: Path) -> int:
    cases, problem = _load(path)
    if cases is None:
        print(f"FAIL {path.name}: {problem}")
        print("0 passed, 1 failed, 0 skipped")
        return 1
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    seen: set[str] = set()
    for index, case in enumerate(cases):
        verdict, cid, detail = case_outcome(case, index, seen)
        counts[verdict] += 1
        print(f"{verdict} {cid}: {detail}" if detail else f"{verdict} {cid}")
    print(f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped")
    return 1 if counts["FAIL"] else 0
