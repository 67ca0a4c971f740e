"""`python -m hack.kube_standin ...` — same as `python hack/kube_standin.py ...`."""

import sys

from hack.kube_standin.cli import main

sys.exit(main())
