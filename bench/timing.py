"""Small timing helpers for the benchmarks."""
from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_seconds(fn: Callable[[], object], repeat: int, warmup: int = 1) -> tuple[float, list[float]]:
    for _ in range(warmup):
        fn()
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs), runs


def verdict(label: str, value: float, limit: float, unit: str = "s", fmt: str = ".3f") -> bool:
    ok = value <= limit
    print(f"  {label:<58} {value:{fmt}} {unit}  (limit {limit:{fmt}} {unit})  {'ok' if ok else 'OVER'}")
    return ok
