"""Generate `protoschema.json` (field numbers -> JSON names) from Kubernetes generated.proto files.

    python -m hack.kube_standin.protoschema_gen API_REPO APIMACHINERY_REPO > hack/kube_standin/protoschema.json

API_REPO / APIMACHINERY_REPO are checkouts (or bare git dirs) of kubernetes/api and
kubernetes/apimachinery. Only messages reachable from the kinds the stand-in serves are kept.
The go-to-protobuf generator names proto fields after their JSON tags, so a field's proto name
is its JSON name. Development tool: not imported by the stand-in.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import Any
from pathlib import Path

FILES = {
    "api": ["core/v1", "apps/v1", "autoscaling/v1", "autoscaling/v2", "rbac/v1",
            "authorization/v1", "authentication/v1", "coordination/v1", "events/v1",
            "discovery/v1"],
    "apimachinery": ["pkg/apis/meta/v1", "pkg/runtime", "pkg/runtime/schema",
                     "pkg/util/intstr", "pkg/api/resource"],
}
ROOT_KINDS = {
    "k8s.io.api.core.v1": ["Namespace", "Pod", "ConfigMap", "Secret", "Service", "Endpoints",
                           "Event", "Node", "ServiceAccount"],
    "k8s.io.api.apps.v1": ["Deployment", "StatefulSet", "ReplicaSet"],
    "k8s.io.api.autoscaling.v1": ["Scale", "HorizontalPodAutoscaler"],
    "k8s.io.api.autoscaling.v2": ["HorizontalPodAutoscaler"],
    "k8s.io.api.rbac.v1": ["Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"],
    "k8s.io.api.authorization.v1": ["SubjectAccessReview", "SelfSubjectAccessReview",
                                    "LocalSubjectAccessReview", "SelfSubjectRulesReview"],
    "k8s.io.api.authentication.v1": ["TokenReview", "TokenRequest", "SelfSubjectReview"],
    "k8s.io.api.coordination.v1": ["Lease"],
    "k8s.io.api.events.v1": ["Event"],
    "k8s.io.api.discovery.v1": ["EndpointSlice"],
    "k8s.io.apimachinery.pkg.apis.meta.v1": ["DeleteOptions", "Status"],
}
_FIELD = re.compile(r"^\s*(optional|repeated)?\s*(map<\s*\w+\s*,\s*[\w.]+\s*>|[\w.]+)\s+(\w+)\s*=\s*(\d+)\s*;")
_SCALARS = {"string", "bytes", "bool", "int32", "int64", "uint32", "uint64", "double", "float",
            "sint32", "sint64", "fixed32", "fixed64"}


def _read(repo: Path, path: str) -> str:
    if (repo / path).exists():
        return (repo / path).read_text()
    return subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{path}"], check=True,
                          capture_output=True, text=True).stdout


def _resolve(type_name: str, package: str) -> str:
    if type_name in _SCALARS:
        return type_name
    return type_name.lstrip(".") if type_name.startswith(".") else f"{package}.{type_name}"


def parse(text: str, schema: dict[str, dict[str, Any]]) -> None:
    package = re.search(r"^package ([\w.]+);", text, re.M).group(1)  # type: ignore[union-attr]
    comment: list[str] = []
    current: dict[str, Any] | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("//"):
            comment.append(stripped)
            continue
        m = re.match(r"^message (\w+) \{", stripped)
        if m:
            current = {"fields": {}}
            if any("+protobuf.nullable=true" in c for c in comment):
                current["list"] = True
            schema[f"{package}.{m.group(1)}"] = current
        elif stripped == "}":
            current = None
        elif current is not None:
            f = _FIELD.match(line)
            if f:
                label, ftype, name, number = f.groups()
                entry: list[Any] = [name]
                mm = re.match(r"map<\s*(\w+)\s*,\s*([\w.]+)\s*>", ftype)
                if mm:
                    entry += ["map", _resolve(mm.group(2), package)]
                else:
                    entry += ["repeated" if label == "repeated" else "single",
                              _resolve(ftype, package)]
                current["fields"][number] = entry
        comment = []


_STRUCT = re.compile(r"^type (\w+) struct \{")
_TAG = re.compile(r'^\s*\w+\s+(\S+)\s+`json:"([^"]*)"[^`]*protobuf:"\w+,(\d+),')


def mark_omit_zero(types_go: str, package: str, schema: dict[str, dict[str, Any]]) -> None:
    """Flag fields Go would omit when zero: `omitempty` on a non-pointer scalar."""
    current: dict[str, Any] | None = None
    for line in types_go.splitlines():
        m = _STRUCT.match(line)
        if m:
            current = schema.get(f"{package}.{m.group(1)}")
            continue
        if line.startswith("}"):
            current = None
            continue
        t = _TAG.match(line)
        if current is None or t is None:
            continue
        go_type, json_tag, number = t.groups()
        entry = current["fields"].get(number)
        if entry is not None and "omitempty" in json_tag and not go_type.startswith("*"):
            entry.append(1)


def reachable(schema: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    todo = [f"{pkg}.{kind}" for pkg, kinds in ROOT_KINDS.items() for kind in kinds]
    keep: dict[str, dict[str, Any]] = {}
    while todo:
        name = todo.pop()
        if name in keep or name not in schema:
            continue
        keep[name] = schema[name]
        todo += [f[2] for f in schema[name]["fields"].values() if f[2] not in _SCALARS]
    return dict(sorted(keep.items()))


def main(argv: list[str]) -> int:
    api, machinery = Path(argv[0]), Path(argv[1])
    schema: dict[str, dict[str, Any]] = {}
    for repo, subs in ((api, FILES["api"]), (machinery, FILES["apimachinery"])):
        for sub in subs:
            text = _read(repo, f"{sub}/generated.proto")
            parse(text, schema)
            package = re.search(r"^package ([\w.]+);", text, re.M).group(1)  # type: ignore[union-attr]
            try:
                mark_omit_zero(_read(repo, f"{sub}/types.go"), package, schema)
            except subprocess.CalledProcessError:
                pass  # packages without types.go (runtime, intstr, resource) are special-cased
    json.dump(reachable(schema), sys.stdout, separators=(",", ":"), sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
