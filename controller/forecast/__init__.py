"""Forecasting, pure: a metric's history in, the highest value expected over the horizon out.

`seasonal.forecast` makes one forecast from a `History` (plain samples on a regular grid, NaN for
gaps); `guard` scores past forecasts against what then happened and decides whether they may be
acted on; `predictor.predict_metric` is the one step the live controller and the backtest both
call, so the two agree on the same history. No I/O, no clock reads, no asyncio.
"""

from controller.forecast.history import History
from controller.forecast.predictor import PredictorState, predict_metric
from controller.forecast.seasonal import Forecast, forecast

__all__ = ["Forecast", "History", "PredictorState", "forecast", "predict_metric"]
