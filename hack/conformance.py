"""Run language-neutral conformance case files against the real implementation.

    python hack/conformance.py adapter FILE.json
    python hack/conformance.py controller FILE.json

Each case prints `PASS id`, `FAIL id: expected ... got ...` or `SKIP id: reason`; the last line is
`N passed, N failed, N skipped`; the exit status is 1 when anything failed. Cases are judged by the
case vocabulary's rules (../shared/spec/vectors/FIELDS.md): a category or field the runner does not
check is a FAIL naming it, a prose expectation a SKIP saying so. Deliberate deviations from
upstream are listed, with their reasons, in the per-component runner modules (for the adapter,
hack/conformance_adapter_deviations.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("adapter", "controller"):
        print(__doc__, file=sys.stderr)
        return 2
    component, path = argv
    if component == "adapter":
        from hack.conformance_adapter import run
    else:
        from hack.conformance_controller import run
    return run(Path(path))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
