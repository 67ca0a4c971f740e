"""Run language-neutral conformance case files against the real implementation.

    python hack/conformance.py adapter FILE.json
    python hack/conformance.py controller FILE.json

Each case prints `PASS id`, `FAIL id: expected ... got ...` or `SKIP id: reason` (a case without
an id is named `cases[N]`, its place in the file); the last line is `N passed, N failed, N skipped`;
the exit status is 1 when anything failed, 2 on a wrong command line. Cases are judged by the case
vocabulary's rules (../shared/spec/vectors/FIELDS.md): a category or field the runner does not
check is a FAIL naming it, a prose expectation a SKIP saying so. Deliberate deviations from
upstream are listed, with their reasons, in one table (hack/conformance/deviations.py); a deviation
excuses a difference only when it reproduces upstream's answer.

Non-goals: judging cases (adapter_runner, controller_runner and their checker modules).
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] not in ("adapter", "controller"):
        print(__doc__, file=sys.stderr)
        return 2
    component, path = args
    if component == "adapter":
        from hack.conformance.adapter_runner import run
    else:
        from hack.conformance.controller_runner import run
    return run(Path(path))
