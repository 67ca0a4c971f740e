"""Content negotiation for the adapter's JSON-only API (aggregated-apiserver spec §7).

Job: decide from an ``Accept`` header whether a plain JSON answer is acceptable. The server
speaks JSON only; kubectl, ``kubectl top``, the HPA and kube-aggregator all accept it as long
as ``*/*`` or a parameter-free ``application/json`` range is present. A request that only
accepts something else (protobuf alone, ``as=Table`` alone, or the aggregated discovery
``as=APIGroupDiscoveryList`` probe on ``/apis``) gets 406, which also makes kube-aggregator fall
back to legacy discovery on every Kubernetes version since 1.26.

Non-goals: serving protobuf, CBOR, Table or aggregated discovery documents. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

# Media-type parameters that turn application/json into a different document kind
# (apidiscovery APIGroupDiscoveryList, meta.k8s.io Table, ...). Their presence means "not
# the plain JSON we serve".
_KIND_PARAMETERS = frozenset({"as", "g", "v"})
# What client-go (the HPA, kubectl) and most tools send, answered without parsing every request.
_PLAIN_JSON = frozenset({"application/json", "application/json, */*", "*/*"})


@dataclass(frozen=True, slots=True, kw_only=True)
class MediaRange:
    """One comma-separated element of an Accept header."""

    type: str
    subtype: str
    parameters: tuple[tuple[str, str], ...]
    quality: float


def parse_accept(header: str | None) -> tuple[MediaRange, ...]:
    """Split an Accept header into media ranges; malformed elements are skipped."""
    if not header:
        return ()
    ranges: list[MediaRange] = []
    for element in header.split(","):
        parsed = _parse_range(element)
        if parsed is not None:
            ranges.append(parsed)
    return tuple(ranges)


def _parse_range(element: str) -> MediaRange | None:
    parts = [p.strip() for p in element.split(";")]
    media = parts[0].lower()
    if "/" not in media:
        return None
    typ, _, subtype = media.partition("/")
    if not typ or not subtype:
        return None
    params: list[tuple[str, str]] = []
    quality = 1.0
    for raw in parts[1:]:
        if not raw:
            continue
        key, _, value = raw.partition("=")
        key = key.strip().lower()
        value = value.strip().strip('"')
        if key == "q":
            try:
                quality = float(value)
            except ValueError:
                quality = 0.0
            continue
        params.append((key, value))
    return MediaRange(type=typ, subtype=subtype, parameters=tuple(params), quality=quality)


def accepts_json(header: str | None) -> bool:
    """True when a plain JSON response satisfies ``header``.

    Missing or empty headers accept anything (HTTP default). ``q=0`` excludes a range.
    """
    if not (header or "").strip() or header in _PLAIN_JSON:
        return True
    # A non-empty header whose ranges are all junk accepts nothing, as in Go's goautoneg-based
    # negotiation: answer 406 rather than guess.
    return any(_range_accepts_json(r) for r in parse_accept(header))


def _range_accepts_json(media: MediaRange) -> bool:
    if media.quality <= 0:
        return False
    if media.type == "*" and media.subtype == "*":
        return True
    if media.type != "application":
        return False
    if media.subtype == "*":
        return True
    if media.subtype != "json":
        return False
    return not any(key in _KIND_PARAMETERS for key, _ in media.parameters)
