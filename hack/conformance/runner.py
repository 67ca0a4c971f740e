"""The case loop both conformance runners share (adapter_runner, controller_runner): one output
line per case, the name of a case that has no id (`cases[N]`, its place in the file), the closing
`N passed, N failed, N skipped` line and the exit status, and the one FAIL for a file that cannot
be read.

Non-goals: reading a component's case file or judging a case (each runner's job), deciding which
difference a deviation excuses (hack.conformance.deviations).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

Verdict = Literal["PASS", "FAIL", "SKIP"]
#: A runner's judgement of one case, given the case and its index in the file: (verdict, detail).
Judge = Callable[[object, int], tuple[Verdict, str]]


def case_label(case: object, index: int) -> str:
    """The name a case goes by in the output: its id (a non-blank string or a number), else
    `cases[N]`, its index in the file's `cases` list."""
    case_id = case.get("id") if isinstance(case, dict) else None
    if isinstance(case_id, (str, int)) and not isinstance(case_id, bool) and str(case_id).strip():
        return str(case_id)
    return f"cases[{index}]"


def _summary(counts: dict[Verdict, int]) -> str:
    return f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped"


def unreadable(path: Path, problem: str) -> int:
    """A case file that cannot be read or has no case list: one FAIL naming the file, exit 1."""
    print(f"FAIL {path.name}: {problem}")
    print(_summary({"PASS": 0, "FAIL": 1, "SKIP": 0}))
    return 1


def run_cases(cases: Sequence[object], judge: Judge) -> int:
    """Judge every case in file order, one line each (`PASS id`, `FAIL id: why`, `SKIP id: why`,
    the detail on one line whatever it holds), then the counts; exit status 1 if any failed."""
    counts: dict[Verdict, int] = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    for index, case in enumerate(cases):
        label = case_label(case, index)
        verdict, detail = judge(case, index)
        counts[verdict] += 1
        detail = " ".join(detail.split("\n"))
        print(f"{verdict} {label}: {detail}" if detail else f"{verdict} {label}")
    print(_summary(counts))
    return 1 if counts["FAIL"] else 0
