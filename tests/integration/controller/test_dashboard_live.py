"""The chart's Grafana dashboard (charts/prom-autoscaler/dashboards/prom-autoscaler.json) shows data:
every panel query and every variable query, run against a real Prometheus that scrapes the running
adapter and controller the way the chart's ServiceMonitors ask (over HTTPS with a token; the release
namespace as the target's `namespace` label, so the autoscaler's own becomes `exported_namespace`),
parses and returns at least one series.

The end-to-end stack serves it: the adapter answers the controller's external metrics and one request
for a metric no rule serves (a 404, for the errors panel); a PromAutoscaler with `prediction: Active`
reads three days of backfilled history (as in test_e2e_prediction), so the forecast panels have data.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hack.stack.backfill import BackfilledPrometheus
from hack.stack.controller_stack import ControllerProcess, ControllerStack, wait_until
from hack.stack.local_prometheus import LocalPrometheus
from tests.paths import REPO

from .prediction_stack import daily_history, start_predictive

pytestmark = pytest.mark.integration

DASHBOARD = REPO / "charts" / "prom-autoscaler" / "dashboards" / "prom-autoscaler.json"
RELEASE_NS = "prom-autoscaler"  # the target label the chart's ServiceMonitors give every series
# Grafana's variables as a user who picked "All" (and a short range) sends them
VARIABLES = {"$__rate_interval": "30s", "$__range": "5m", "$namespace": ".*", "$autoscaler_namespace": ".*",
             "$autoscaler": ".*"}


class ScrapingPrometheus(LocalPrometheus):
    """A Prometheus scraping the adapter's and the controller's /metrics the way the chart's
    ServiceMonitors ask for (HTTPS, a bearer token, the release namespace as `namespace`); the
    scrape config is written here, not rendered from the chart's ServiceMonitors."""

    def __init__(self, jobs: dict[str, tuple[str, str]], token: str, workdir: Path) -> None:
        super().__init__([], workdir=workdir)
        self.jobs, self.token = jobs, token

    def _write_config(self) -> Path:
        scrapes = [{"job_name": job, "scheme": scheme, "bearer_token": self.token,
                    "tls_config": {"insecure_skip_verify": True},
                    "static_configs": [{"targets": [address],
                                        "labels": {"namespace": RELEASE_NS, "pod": f"{job}-0"}}]}
                   for job, (scheme, address) in self.jobs.items()]
        config = {"global": {"scrape_interval": "1s", "scrape_timeout": "1s"}, "scrape_configs": scrapes}
        path = self.workdir / "prometheus.yml"
        path.write_text(json.dumps(config))
        return path


def _queries(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    """(where, PromQL) of every panel target and every query variable, Grafana's variables filled in."""
    found = [(f"panel {p['title']!r} {t['refId']}", t["expr"]) for p in dashboard["panels"]
             for t in p.get("targets", [])]
    for var in dashboard["templating"]["list"]:
        if var["type"] == "query":
            metric = re.fullmatch(r"label_values\((.+), *(\w+)\)", var["query"]["query"])
            assert metric, var
            found.append((f"variable {var['name']}", f"group by ({metric[2]}) ({metric[1]})"))
    return [(where, _fill(expr)) for where, expr in found]


def _fill(expr: str) -> str:
    for name, value in sorted(VARIABLES.items(), key=lambda kv: -len(kv[0])):
        expr = expr.replace(name, value)
    assert "$" not in expr, f"a Grafana variable the test does not know: {expr}"
    return expr


def _answer(prometheus: LocalPrometheus, expr: str) -> str:
    """'' when `expr` parses and returns series, else what is wrong."""
    try:
        return "" if prometheus.query(expr) else "no series"
    except urllib.error.HTTPError as err:
        return f"refused ({err.code}): {err.read().decode(errors='replace')}"


@pytest.fixture
def history(ns: str, tmp_path: Path) -> Iterator[BackfilledPrometheus]:
    (tmp_path / "history").mkdir()
    # a daily hour at 160 that starts 4 minutes after now's time of day: the controller's first forecast
    # (its proof over the last day starts a day ago, when that ramp came 4 minutes later) is trusted and
    # asks for the ramp, so the prediction panels have series whatever the time of day the test runs
    text = daily_history(ns, now=time.time(), ramp_in=240, low=20.0, high=160.0)
    with BackfilledPrometheus(text, workdir=tmp_path / "history") as server:
        yield server


@pytest.mark.timeout(150)
def test_every_dashboard_query_parses_and_returns_series(controller_stack: ControllerStack, ns: str,
                                                         history: BackfilledPrometheus, tmp_path: Path) -> None:
    stack = controller_stack
    ctl: ControllerProcess = start_predictive(stack, ns, history_url=history.url, live=35, per_pod="10")
    jobs = {"adapter": ("https", f"127.0.0.1:{stack.adapter.port}"),
            "controller": ("https", f"127.0.0.1:{ctl.metrics_port}")}
    (tmp_path / "scraper").mkdir()
    with ScrapingPrometheus(jobs, stack.token, tmp_path / "scraper") as prometheus:
        wait_until(lambda: ctl.metric("prom_autoscaler_controller_prediction_forecast") > 0, timeout=60,
                   interval=0.5, what="a forecast on the controller's /metrics")
        missing = stack.kubectl("get", "--raw", f"/apis/custom.metrics.k8s.io/v1beta1/namespaces/{ns}/pods/*/"
                                "no_such_metric", check=False)
        assert missing.returncode != 0 and "NotFound" in missing.stderr, missing.stderr
        queries = _queries(json.loads(DASHBOARD.read_text()))
        assert len(queries) >= 20, queries
        failing: dict[str, str] = {}

        def all_answer() -> bool:
            failing.clear()
            failing.update({f"{where}: {expr}": why for where, expr in queries
                            if (why := _answer(prometheus, expr))})
            return not failing

        try:
            wait_until(all_answer, timeout=45, interval=1.0, what="every dashboard query answered")
        except TimeoutError:
            pytest.fail("dashboard queries without an answer:\n" + "\n".join(f"{q} -> {why}" for q, why in failing.items()))
