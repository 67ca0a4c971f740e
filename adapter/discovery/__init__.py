"""Series discovery: `registry` (pure immutable snapshot of exposed metrics) and `relist`
(the periodic Prometheus relist that builds and swaps it)."""

__all__ = ["registry", "relist"]
