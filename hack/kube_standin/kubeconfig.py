"""The one way hack/ writes a kubeconfig: one cluster, its users, a context per user.

Job: build the kubeconfig document (clientcmd v1 `Config`) for a server the workshop runs (the
stand-in, its API proxy, a benchmark's API server), write it where only its owner reads it (0600,
replaced atomically, so a reader never sees half a file), and read back the token and CA a client
of that server needs. kubecommon.kube.config reads what this writes.
Non-goals: merging with an existing kubeconfig, exec or auth-provider users.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

__all__ = ["kubeconfig", "token_and_ca", "write_kubeconfig"]


def kubeconfig(server: str, users: Mapping[str, Mapping[str, str]], *, cluster: str = "standin",
               ca_pem: bytes | None = None, contexts: Mapping[str, str] | None = None,
               current: str = "", namespace: str = "") -> dict[str, Any]:
    """A Config for `server`: `users` by name (their `user` stanza), `contexts` context name ->
    user name (default: one context per user, named like it), `current` (default: the first)."""
    named = dict(contexts) if contexts is not None else {name: name for name in users}
    unknown = sorted(set(named.values()) - set(users))
    if unknown or not named:
        raise ValueError(f"kubeconfig: contexts name unknown users {unknown}" if unknown else "kubeconfig: no user")
    stanza: dict[str, str] = {"server": server}
    if ca_pem is not None:
        stanza["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    context = {"cluster": cluster, **({"namespace": namespace} if namespace else {})}
    return {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": cluster, "cluster": stanza}],
        "users": [{"name": name, "user": dict(user)} for name, user in users.items()],
        "contexts": [{"name": name, "context": {**context, "user": user}} for name, user in named.items()],
        "current-context": current or next(iter(named)),
    }


def write_kubeconfig(path: Path, config: Mapping[str, Any]) -> Path:
    """Write `config` to `path` (parents made, mode 0600, replaced atomically); returns `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.unlink(missing_ok=True)
    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w", encoding="utf-8") as out:
        out.write(yaml.safe_dump(dict(config), sort_keys=False))
    tmp.replace(path)
    return path


def token_and_ca(path: Path) -> tuple[str, bytes]:
    """The first token user's token and the cluster's CA (PEM) of a kubeconfig this module wrote."""
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    token = next(u["user"]["token"] for u in config["users"] if "token" in u["user"])
    return token, base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"])
