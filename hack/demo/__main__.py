"""`python -m hack.demo ...`: the same as `python hack/demo.py ...` (`make demo`)."""

import sys

from hack.demo.cli import main

sys.exit(main())
