"""Run the Kubernetes API-server stand-in: `python hack/kube_standin.py --help`."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hack.kube_standin.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
