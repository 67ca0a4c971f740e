"""The three PATCH dialects kube-apiserver accepts: JSON patch, JSON merge patch, strategic merge.

Strategic merge follows the parts of k8s.io/apimachinery/pkg/util/strategicpatch that kubectl
(`apply`, `label`, `annotate`, `scale`, `set`, `edit`) produces for the built-in types in scope:
lists of objects with a merge key are merged by that key, `null` deletes, and the `$patch`,
`$retainKeys`, `$deleteFromPrimitiveList/…` and `$setElementOrder/…` directives are honoured.
Non-goals: the full struct-tag table of every Kubernetes type; lists not named here replace.
Pure: no I/O.
"""

from __future__ import annotations

import copy
from typing import Any

from kubecommon.status import BadRequest, Invalid, UnsupportedMediaType

# Field name -> merge key, for the list fields kubectl merges (from the types' patchMergeKey tags).
MERGE_KEYS = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name",
    "volumes": "name", "env": "name", "volumeMounts": "mountPath", "volumeDevices": "devicePath",
    "ports": "containerPort", "imagePullSecrets": "name", "hostAliases": "ip",
    "tolerations": None, "conditions": "type", "ownerReferences": "uid", "finalizers": None,
    "topologySpreadConstraints": "topologyKey", "resourceClaims": "name",
    "containerStatuses": "name", "initContainerStatuses": "name", "addresses": None,
    "podIPs": "ip", "metrics": None, "currentMetrics": None,
}
# Lists of scalars that strategic merge unions instead of replacing.
MERGE_PRIMITIVE_LISTS = frozenset({"finalizers"})

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


def apply_patch(original: dict[str, Any], patch: Any, content_type: str, *,
                strategic_allowed: bool) -> dict[str, Any]:
    ctype = content_type.split(";")[0].strip().lower()
    if ctype == JSON_PATCH:
        return json_patch(original, patch)
    patched: dict[str, Any]
    if ctype == MERGE_PATCH:
        patched = merge_patch(original, patch)
        return patched
    if ctype == STRATEGIC_PATCH and strategic_allowed:
        patched = strategic_merge(original, patch)
        return patched
    accepted = [JSON_PATCH, MERGE_PATCH, APPLY_PATCH]
    if strategic_allowed:
        accepted.insert(2, STRATEGIC_PATCH)
    raise UnsupportedMediaType(
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(accepted))


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise BadRequest(f"invalid JSON pointer: {path!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(doc: Any, parts: list[str], path: str) -> Any:
    node = doc
    for part in parts[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise Invalid(f"the server rejected our request due to an error in our request: "
                          f"doc is missing path: \"{path}\"")
    return node


def _get(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    if not parts:
        return doc
    parent = _parent(doc, parts, path)
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        return parent[int(last)]
    raise Invalid(f"the server rejected our request due to an error in our request: "
                  f"doc is missing key: \"{path}\"")


def _remove(doc: Any, path: str) -> Any:
    parts = _pointer(path)
    value = _get(doc, path)
    parent = _parent(doc, parts, path)
    if isinstance(parent, dict):
        del parent[parts[-1]]
    else:
        del parent[int(parts[-1])]
    return value


def _add(doc: Any, path: str, value: Any, *, replace: bool = False) -> Any:
    parts = _pointer(path)
    if not parts:
        return value
    parent = _parent(doc, parts, path)
    last = parts[-1]
    if isinstance(parent, dict):
        if replace and last not in parent:
            _get(doc, path)
        parent[last] = value
    elif isinstance(parent, list):
        if last == "-" and not replace:
            parent.append(value)
        elif last.isdigit() and int(last) <= len(parent) - (1 if replace else 0):
            if replace:
                parent[int(last)] = value
            else:
                parent.insert(int(last), value)
        else:
            raise Invalid(f"the server rejected our request due to an error in our request: "
                          f"index out of range in \"{path}\"")
    else:
        raise Invalid(f"the server rejected our request due to an error in our request: "
                      f"doc is missing path: \"{path}\"")
    return doc


def json_patch(original: dict[str, Any], ops: Any) -> dict[str, Any]:
    """RFC 6902 (add, remove, replace, move, copy, test)."""
    if not isinstance(ops, list):
        raise BadRequest("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc: Any = copy.deepcopy(original)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op:
            raise BadRequest("invalid JSON patch operation")
        kind, path = op["op"], op.get("path", "")
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            _remove(doc, path)
        elif kind == "replace":
            doc = _add(doc, path, copy.deepcopy(op.get("value")), replace=True)
        elif kind == "move":
            doc = _add(doc, path, _remove(doc, op.get("from", "")))
        elif kind == "copy":
            doc = _add(doc, path, copy.deepcopy(_get(doc, op.get("from", ""))))
        elif kind == "test":
            if _get(doc, path) != op.get("value"):
                raise Invalid(f"the server rejected our request due to an error in our request: "
                              f"testing value {path} failed")
        else:
            raise BadRequest(f"Unexpected kind: {kind}")
    if not isinstance(doc, dict):
        raise BadRequest("a JSON patch must produce an object")
    return doc


def strategic_merge(original: Any, patch: Any) -> Any:
    if not isinstance(patch, dict) or not isinstance(original, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if patch.get("$patch") == "delete":
        return None
    result = dict(original)
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key.startswith("$setElementOrder/") or key in ("$retainKeys", "$patch"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            result[field] = [v for v in result.get(field) or [] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list) and isinstance(result.get(key), list):
            result[key] = _merge_list(key, result[key], value)
        elif isinstance(value, dict):
            merged = strategic_merge(result.get(key) if isinstance(result.get(key), dict) else {},
                                     value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        else:
            result[key] = copy.deepcopy(value)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(field: str, original: list[Any], patch: list[Any]) -> list[Any]:
    if field in MERGE_PRIMITIVE_LISTS:
        return original + [v for v in patch if v not in original]
    key = MERGE_KEYS.get(field)
    if not key or not all(isinstance(p, dict) for p in patch):
        if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
            return [p for p in patch if not (isinstance(p, dict) and "$patch" in p)]
        return copy.deepcopy(patch)
    result = [copy.deepcopy(o) for o in original]
    for item in patch:
        if item.get("$patch") == "replace":
            return [copy.deepcopy(p) for p in patch if p.get("$patch") != "replace"]
        index = next((i for i, o in enumerate(result)
                      if isinstance(o, dict) and o.get(key) == item.get(key)), None)
        if item.get("$patch") == "delete":
            if index is not None:
                result.pop(index)
        elif index is None:
            result.append({k: v for k, v in item.items() if k != "$patch"})
        else:
            result[index] = strategic_merge(result[index], item)
    return result
