"""`python -m controller.backtest …`: the backtest command on its own (see `cli.main`)."""

import sys

from controller.backtest.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
