"""The one reader of metric history, used by the backtest and the live controller's forecasts.

rules (the adapter's rule file, the one door into `adapter`) -> resolve (metric -> the PromQL the
adapter runs, pure) -> prometheus (I/O: series discovery, chunked concurrent range queries) ->
fold (answers -> per-tick arrays, pure, one copy) -> live (the controller's per-object history,
read once and then kept up to date incrementally, and the forecast port the reconciler calls).
"""
