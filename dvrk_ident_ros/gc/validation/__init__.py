"""Scoring gc estimates on poses they did not see: the held-out figures over the folds of
fitting/folds.py (validation.py) and the least figure any file of the format reaches on a data set
(bound.py). Offline only: the run-time compensation never imports it."""
