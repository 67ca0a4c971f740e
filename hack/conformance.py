"""Run conformance case files: `python hack/conformance.py adapter|controller FILE.json`; the runners
live in hack/conformance/ (cli.py says what the output means)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hack.conformance.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
