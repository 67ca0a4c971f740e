"""Command line of the API-server stand-in.

    python hack/kube_standin.py --port PORT --kubeconfig PATH [--simulate-workloads]
        [--ready-delay SECONDS] [--service NAMESPACE/NAME=HOST:PORT ...]

Prints `serving on https://127.0.0.1:PORT` and then `ready` on its own line once it serves.
`--port 0` picks a free port (read it from that line or from the kubeconfig).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

from .state import Options

_SERVICE = re.compile(r"^(?P<ns>[a-z0-9-]+)/(?P<name>[a-z0-9-]+)=(?P<host>[^:]+):(?P<port>\d+)$")


def _service(text: str) -> tuple[str, str]:
    m = _SERVICE.fullmatch(text)
    if not m:
        raise argparse.ArgumentTypeError(f"--service must be NAMESPACE/NAME=HOST:PORT, got {text!r}")
    return f"{m['ns']}/{m['name']}", f"{m['host']}:{m['port']}"


def parse_args(argv: list[str] | None = None) -> Options:
    p = argparse.ArgumentParser(prog="kube_standin.py", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, required=True, help="HTTPS port on 127.0.0.1 (0: any free)")
    p.add_argument("--kubeconfig", required=True, help="where to write the kubeconfig")
    p.add_argument("--data-dir", help="certificates directory (default: <kubeconfig>.d); "
                   "certificates found there are reused")
    p.add_argument("--simulate-workloads", action="store_true",
                   help="keep pods in step with Deployments/StatefulSets/ReplicaSets")
    p.add_argument("--ready-delay", type=float, default=2.0,
                   help="seconds before a simulated pod turns Ready (default 2)")
    p.add_argument("--service", action="append", type=_service, default=[],
                   metavar="NAMESPACE/NAME=HOST:PORT",
                   help="route a Service (as APIServices reference it) to a local address")
    p.add_argument("--watch-cache-size", type=int, default=10000,
                   help="events kept per resource for watch resumption (older: 410 Gone)")
    p.add_argument("--bookmark-interval", type=float, default=5.0,
                   help="seconds between watch bookmarks for clients that allow them")
    p.add_argument("--availability-interval", type=float, default=2.0,
                   help="seconds between APIService availability probes")
    p.add_argument("--nodes", type=int, default=1, help="number of Node objects to create")
    a = p.parse_args(argv)
    data_dir = a.data_dir or str(Path(a.kubeconfig).with_name(Path(a.kubeconfig).name + ".d"))
    return Options(port=a.port, kubeconfig=a.kubeconfig, data_dir=data_dir,
                   simulate_workloads=a.simulate_workloads, ready_delay=a.ready_delay,
                   services=dict(a.service), watch_cache_size=a.watch_cache_size,
                   bookmark_interval=a.bookmark_interval,
                   availability_interval=a.availability_interval, nodes=a.nodes)


def main(argv: list[str] | None = None) -> int:
    from .app import main as app_main
    return app_main(parse_args(argv))
