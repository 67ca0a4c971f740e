"""`python -m hack.conformance adapter|controller FILE.json`: the same as `python hack/conformance.py ...`."""

import sys

from hack.conformance.cli import main

sys.exit(main())
