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


def wakeup_latency(seconds: float, period: float = 0.001) -> list[float]:
    """The machine's own wake-up latency (what cyclictest measures): a thread sleeps ``period``
    again and again; the lateness of each wake-up, in seconds.

    Any message passing between processes waits for at least one such wake-up
    (the receiver blocks until data arrives), so this is a floor under the
    tail of every latency the node benchmark measures.
    """
    late = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        start = time.monotonic_ns()
        time.sleep(period)
        late.append((time.monotonic_ns() - start) * 1e-9 - period)
    return late

