"""Tests of the pure forecaster: seasonal analogues, the accuracy guard, the per-sync predictor."""
