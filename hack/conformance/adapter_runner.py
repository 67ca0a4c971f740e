"""Adapter conformance: run prometheus-adapter case files against our implementation.

    python hack/conformance.py adapter ../shared/spec/vectors/prometheus-adapter-public.json

Each case is dispatched on its `category` to a checker that drives the real code (rule loading
and compilation, naming, PromQL rendering, discovery's registry, the metrics services) and
compares with `expected`. Output: `PASS id`, `FAIL id: expected ... got ...`, `SKIP id: reason`,
then `N passed, N failed, N skipped`; exit 1 if anything failed.

DEVIATIONS (hack/deviations.py) lists what we deliberately do differently.
A failing case is reported as
`SKIP id: deviation <name>: <reason>` only when that deviation's normaliser, applied to our
answer, makes it equal to upstream's — so a deviation can never hide an unrelated bug.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from hack.conformance import adapter_answers as answers
from hack.conformance import adapter_client as client
from hack.conformance import adapter_compare as compare
from hack.conformance import adapter_files as files
from hack.conformance import adapter_flags as flags
from hack.conformance import adapter_registry as registry
from hack.conformance import adapter_rules as rules
from hack.conformance import adapter_services as services
from hack.conformance.adapter_observed import LOG_FIELDS, OBSERVED
from hack.conformance.deviations import LOG_DEVIATIONS, excusing
from hack.conformance.runner import Verdict, run_cases, unreadable

CHECKERS = {**rules.CHECKERS, **registry.CHECKERS, **services.CHECKERS, **flags.CHECKERS, **client.CHECKERS,
            **answers.CHECKERS}


def _unchecked_keys(case: Mapping[str, Any]) -> list[str]:
    """Keys of `expected` that the category is not observed as (adapter_observed, one table): a
    hidden case must never pass on the part of the answer nobody looked at."""
    checked = OBSERVED[case["category"]]
    return sorted(str(k) for k in case["expected"]
                  if k not in checked and k not in compare.PROVENANCE_FIELDS and not str(k).startswith("_"))


def run(path: Path) -> int:
    """Run the adapter case file at `path`: one line per case, then the counts; 1 if any failed."""
    try:
        file_fixtures, case_list = files.load(path)
    except files.CaseFileError as err:
        return unreadable(path, str(err))
    # Cases may share a setup by id (`same_setup_as`); checkers find it here, in any order. A file
    # holding only some cases may refer to setups and fixtures of its companion files (e.g. hidden
    # cases naming `registry.query.01` of the public file); the file's own entries win.
    companion_fixtures, companion_cases = files.companions(Path(path))
    fixtures = {**companion_fixtures, **file_fixtures,
                "__cases__": {**companion_cases, **files.index(case_list)}}
    with _capturing_logs() as capture:
        def judge(case: object, index: int) -> tuple[Verdict, str]:
            capture.lines.clear()
            return _run_case(case, fixtures, capture.lines)

        return run_cases(case_list, judge)


def judge_case(case: object, fixtures: Mapping[str, Any]) -> tuple[Verdict, str]:
    """The verdict on one case, its log fields compared with the lines its run logged."""
    with _capturing_logs() as capture:
        return _run_case(case, fixtures, capture.lines)


@contextlib.contextmanager
def _capturing_logs() -> Iterator[_LogCapture]:
    """Log lines go to the case's capture (log_contains, logged_error_prefix), never the output."""
    capture = _LogCapture()
    previous_handlers, previous_level = logging.root.handlers[:], logging.root.level
    logging.root.handlers[:] = [capture]
    logging.root.setLevel(logging.DEBUG)
    try:
        yield capture
    finally:
        logging.root.handlers[:] = previous_handlers
        logging.root.setLevel(previous_level)


class _LogCapture(logging.Handler):
    """Every log line of the case being run, as `<message>` text."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(record.getMessage())
        except Exception:  # noqa: BLE001 - a badly formatted log call must not fail the case
            self.lines.append(str(record.msg))


def _refusal(case: Mapping[str, Any]) -> tuple[Verdict, str] | None:
    """Why the case cannot be judged before running it: a FAIL for what this runner does not know
    (never a PASS on the part nobody looked at), a SKIP for what only a person can judge."""
    category = case["category"]
    expected, data = case.get("expected"), case.get("input", {})
    if category not in compare.CATEGORIES:
        return "FAIL", f"unknown category {category!r} (not in the case vocabulary, FIELDS.md)"
    if not isinstance(expected, dict):
        return "FAIL", f"`expected` is not an object (got {type(expected).__name__}); nothing can be compared"
    unknown = sorted(str(k) for k in expected if k not in compare.EXPECTED_FIELDS and not str(k).startswith("_"))
    if unknown:
        return "FAIL", f"unknown expected field {', '.join(unknown)} (not in the case vocabulary, FIELDS.md)"
    unknown = compare.unknown_input_fields(data)
    if unknown:
        return "FAIL", f"unknown input field {', '.join(unknown)} (not in the case vocabulary, FIELDS.md)"
    prose = compare.prose_fields(expected)
    if prose:
        return "SKIP", f"prose expectation ({', '.join(prose)}): a person checks it"
    if isinstance(data, dict) and compare.PROSE_INPUTS & {k for k, v in data.items() if isinstance(v, str)}:
        return "SKIP", f"prose expectation: the case's input ({', '.join(sorted(compare.PROSE_INPUTS & set(data)))}) " \
                       "describes a sequence in words"
    if category not in CHECKERS:
        return "FAIL", f"no checker for category {category!r}: this runner cannot check it"
    unchecked = _unchecked_keys(case)
    if unchecked:  # a field of the vocabulary that this family's answer does not carry
        observed_as = ", ".join(sorted(OBSERVED[category]))
        return "FAIL", (f"expected {', '.join(unchecked)}: a {category!r} answer has no such field "
                        f"(it is observed as {observed_as}; FIELDS.md)")
    return None


def _run_case(case: object, fixtures: Mapping[str, Any], log: list[str] | None = None) -> tuple[Verdict, str]:
    if not isinstance(case, dict):
        return "FAIL", f"a case must be a JSON object, got {type(case).__name__}: {case!r:.80}"
    category = case.get("category")
    if not isinstance(category, str):
        return "FAIL", f"the case has no `category` string (got {category!r:.80}); it cannot be checked"
    refusal = _refusal(case)
    if refusal is not None:
        return refusal
    log = log if log is not None else []
    # the checkers see the answer's fields; the log fields are compared here, with the run's lines
    answer_case = {**case, "expected": {k: v for k, v in case["expected"].items() if k not in LOG_FIELDS}}
    try:
        result = CHECKERS[category](answer_case, fixtures)
    except compare.Unsupported as err:
        return "SKIP", f"not checked: {err}"
    except (Exception, SystemExit) as err:  # noqa: BLE001 - one broken case must not stop the run
        return "FAIL", f"checker crashed: {type(err).__name__}: {err}"
    if result.ok:
        return _logged(case["expected"], log)
    deviation = excusing("adapter", answer_case, result.got, lambda got: compare.matches(result.expected, got))
    if deviation is not None:
        return "SKIP", f"deviation {deviation.name}: {deviation.reason}"
    return "FAIL", f"expected {result.expected!r} got {result.got!r}"


def _logged(expected: Mapping[str, Any], log: list[str]) -> tuple[Verdict, str]:
    """The log fields of a case whose answer matched: compared with the lines its run logged,
    `log_contains` a substring of one, `logged_error_prefix` a prefix."""
    for key in LOG_FIELDS:
        want = expected.get(key)
        if want is None:
            continue
        ok = any(compare.matches(want, line, "log_contains") for line in log) if key == "log_contains" \
            else compare.matches(want, log, key)
        if ok:
            continue
        for deviation in LOG_DEVIATIONS:
            if any(compare.matches(want, deviation.normalise(line, expected), key) for line in log):
                return "SKIP", f"deviation {deviation.name}: {deviation.reason}"
        return "FAIL", f"expected {key} {want!r} in the run's log, got {log!r}"
    return "PASS", ""
