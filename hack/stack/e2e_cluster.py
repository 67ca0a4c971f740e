"""What a real cluster runs for the end-to-end suite (`make e2e KUBECONFIG=...`, the kind workflow).

The suite's data are the sample exporter's series for the six demo pods (hack.stack.sample_exporter);
on the stand-in they come from a local exporter and Prometheus. On a cluster this module writes:

* `manifests`: the demo namespaces, Pods (named as the exporter reports them, `app=<service>`,
  a pause container) and Deployments (0 replicas, as on the stand-in); in namespace `e2e-system`
  the exporter (python:3.11-slim running sample_exporter.py from a ConfigMap, standard library only)
  and a Prometheus scraping it every second with honor_labels, as the local one does;
* `values`: the chart values that point the adapter at that Prometheus with the suite's rule file
  (hack.stack.metrics_stack.RULES), released as `prom-autoscaler` in `monitoring`, where the suite's
  APIService names and paths expect it.

Usage: python -m hack.stack.e2e_cluster manifests | kubectl apply -f -
       python -m hack.stack.e2e_cluster values > e2e-values.yaml   (helm install -f)

Non-goals: creating the cluster, building or loading the image (the workflow does), Nodes: the demo's
node-a/node-b do not exist on a real cluster, so the suite's node checks run on the stand-in only.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

from hack.stack.metrics_stack import ADAPTER_SERVICE, RULES, cluster_objects
from hack.stack.sample_exporter import demo_pods

SYSTEM = "e2e-system"
EXPORTER_PORT = 9101
PROMETHEUS_URL = f"http://prometheus.{SYSTEM}.svc"
PAUSE = "registry.k8s.io/pause:3.10"
_EXPORTER_SOURCE = Path(__file__).with_name("sample_exporter.py")


def _workload(name: str, image: str, args: list[str], port: int, volume: dict[str, Any]) -> list[dict[str, Any]]:
    labels = {"app": name}
    container = {"name": name, "image": image, "args": args, "ports": [{"containerPort": port}],
                 "volumeMounts": [{"name": "files", "mountPath": "/etc/e2e"}],
                 "readinessProbe": {"tcpSocket": {"port": port}, "periodSeconds": 2}}
    return [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": SYSTEM},
         "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                  "template": {"metadata": {"labels": labels},
                               "spec": {"containers": [container], "volumes": [{"name": "files", **volume}]}}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": SYSTEM},
         "spec": {"selector": labels, "ports": [{"port": port, "targetPort": port}]}},
    ]


def manifests() -> list[dict[str, Any]]:
    """The demo objects and the exporter + Prometheus pair, in apply order."""
    objects = [o for o in cluster_objects(demo_pods()) if o["kind"] != "Node"]
    for obj in objects:
        if obj["kind"] == "Pod":  # scheduled on a real node, status set by the kubelet
            obj["spec"] = {"containers": [{"name": obj["spec"]["containers"][0]["name"], "image": PAUSE}]}
            obj.pop("status")
        elif obj["kind"] == "Deployment":
            obj["spec"]["template"]["spec"]["containers"][0]["image"] = PAUSE
    scrape = {"global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
              "scrape_configs": [{"job_name": "sample", "honor_labels": True,
                                  "static_configs": [{"targets": [f"sample-exporter:{EXPORTER_PORT}"]}]}]}
    system: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SYSTEM}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "e2e-files", "namespace": SYSTEM},
         "data": {"sample_exporter.py": _EXPORTER_SOURCE.read_text(), "prometheus.yml": yaml.safe_dump(scrape)}},
    ]
    files = {"configMap": {"name": "e2e-files"}}
    system += _workload("sample-exporter", "python:3.11-slim",
                        ["python", "/etc/e2e/sample_exporter.py", "--host=0.0.0.0", f"--port={EXPORTER_PORT}"],
                        EXPORTER_PORT, files)
    system += _workload("prometheus", "prom/prometheus:v2.53.0",
                        ["--config.file=/etc/e2e/prometheus.yml", "--storage.tsdb.path=/prometheus",
                         "--storage.tsdb.retention.time=2h"], 9090, files)
    return system + objects


def values() -> dict[str, Any]:
    """Chart values for the suite: its rule file, the in-cluster Prometheus, a 2 s relist."""
    namespace, name = ADAPTER_SERVICE
    rules = yaml.safe_load(RULES)
    return {"fullnameOverride": name, "namespaceOverride": namespace,
            "prometheus": {"url": PROMETHEUS_URL, "port": 9090}, "metricsRelistInterval": "2s",
            "rules": {"default": False, "custom": rules.get("rules", []), "external": rules.get("externalRules", []),
                      "resource": rules.get("resourceRules", {})}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("what", choices=["manifests", "values"])
    args = parser.parse_args(argv)
    if args.what == "manifests":
        yaml.safe_dump_all(manifests(), sys.stdout, sort_keys=False)
    else:
        yaml.safe_dump(values(), sys.stdout, sort_keys=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
