"""Estimating a gc file from recorded poses: the pose data and its loaders (CUHK directories, bags,
.npz), MLSE and SLSE (Lin 2019) with the cross-validation of their polynomial orders, the regularised
MLSE and the held-out folds it cross-validates on (folds.py), the estimators by name (fits.py), and an
identified model's gravity refitted to static holds (static_refit.py). Of gc, it imports the model
only: never validation or the run-time compensation."""
