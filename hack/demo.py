"""`make demo`: run the demo (`python hack/demo.py --help`); the code lives in hack/demo/."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hack.demo.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
