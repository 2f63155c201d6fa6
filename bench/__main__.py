"""Run the benchmarks: python -m bench [model ...]."""
from __future__ import annotations

import importlib
import sys
import time

BENCHMARKS = ["model", "identify", "excitation", "gc", "gc_generalisation", "sim", "recorder", "nodes",
              "gc_outage", "playback", "export", "drift", "safety_net", "fit_check", "console_gc"]


def main(argv: list[str]) -> int:
    names = argv or BENCHMARKS
    unknown = sorted(set(names) - set(BENCHMARKS))
    if unknown:
        print(f"unknown benchmark(s) {unknown}; known: {BENCHMARKS}", file=sys.stderr)
        return 2
    failed = []
    for name in names:
        print(f"=== bench {name} ===", flush=True)
        start = time.perf_counter()
        ok = importlib.import_module(f"bench.bench_{name}").run()
        print(f"=== bench {name}: {'PASS' if ok else 'FAIL'} ({time.perf_counter() - start:.1f} s) ===\n")
        if not ok:
            failed.append(name)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
