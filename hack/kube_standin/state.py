"""The parts of one running stand-in, passed to every handler (the composition root builds it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .authn import Authenticator
from .objects import ObjectApi
from .pki import Pki
from .rbac import Authorizer
from .registry import TypeRegistry
from .store import Store


@dataclass(frozen=True, slots=True, kw_only=True)
class Options:
    port: int
    kubeconfig: str
    data_dir: str
    simulate_workloads: bool = False
    ready_delay: float = 2.0
    services: dict[str, str] = field(default_factory=dict)  # "ns/name" -> "host:port"
    watch_cache_size: int = 10000
    bookmark_interval: float = 5.0
    availability_interval: float = 2.0
    nodes: int = 1


@dataclass(slots=True, kw_only=True, frozen=False)  # frozen=False: aggregator attached after start
class State:
    options: Options
    store: Store
    types: TypeRegistry
    api: ObjectApi
    authn: Authenticator
    authz: Authorizer
    pki: Pki
    aggregator: Any = None
