"""Series discovery: `registry` (pure immutable snapshot of exposed metrics), `relist`
(the periodic Prometheus relist that builds and swaps it) and `reload` (live reload of the rule
file, whose rules the next relist swaps in)."""

__all__ = ["registry", "relist", "reload"]
