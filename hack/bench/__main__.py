"""Run every benchmark in turn (`make bench`), or the ones named.

    python -m hack.bench                      all of them, default sizes
    python -m hack.bench relist controller_decisions

Each benchmark measures its own real baseline in the same run and prints ratios against it; the
exit status is 1 when any benchmark reports a missed bar.
"""

from __future__ import annotations

import importlib
import sys

BENCHMARKS = ("controller_decisions", "backtest", "prediction", "relist", "adapter_latency", "standin_list",
              "kube_client")


def main(argv: list[str]) -> int:
    names = argv or list(BENCHMARKS)
    unknown = sorted(set(names) - set(BENCHMARKS))
    if unknown:
        print(f"unknown benchmark(s) {unknown}; choose from {list(BENCHMARKS)}", file=sys.stderr)
        return 2
    failed = []
    for name in names:
        print(f"\n=== hack.bench.{name} ===", flush=True)
        module = importlib.import_module(f"hack.bench.{name}")
        if module.main([]) != 0:
            failed.append(name)
    if failed:
        print(f"\nbars missed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
