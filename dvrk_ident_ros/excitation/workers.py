"""Independent optimisation runs spread over worker processes.

The excitation search is many independent SLSQP runs on small matrices
(hundreds of rows, tens of columns). A multi-threaded BLAS slows such runs
down (threads synchronise on every small product) and makes their last bits,
and so SLSQP's path, depend on the thread count. So the runs go to worker
processes with a single-threaded BLAS, one per CPU: faster, and the same
seed gives the same answer on any machine with the same libraries.
"""
from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from typing import Any

# The thread-count variables of the BLAS builds numpy and scipy may load.
_SINGLE_THREAD = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                  "VECLIB_MAXIMUM_THREADS")


def available_cpus() -> int:
    """CPUs this process may run on (its affinity, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


@contextmanager
def _single_threaded_children() -> Iterator[None]:
    """Children spawned inside this block load their BLAS with one thread."""
    saved = {name: os.environ.get(name) for name in _SINGLE_THREAD}
    os.environ.update({name: "1" for name in _SINGLE_THREAD})
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _exit_with_parent(parent: int) -> None:
    """Linux: have the kernel end this worker when its parent dies (a killed
    optimiser must not leave its workers computing)."""
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the pool's own checks remain
        return
    if os.getppid() != parent:  # the parent died before the request
        os._exit(1)


def _start_worker(parent: int, initializer: Callable[..., None], initargs: tuple) -> None:
    _exit_with_parent(parent)
    initializer(*initargs)


class TaskRunner:
    """Runs ``fn(*args)`` for a list of argument tuples, in ``workers`` spawned
    processes (each set up once by ``initializer(*initargs)``), or in this
    process when ``workers`` is 0. Results come back in the order of the tasks."""

    def __init__(self, workers: int, initializer: Callable[..., None], initargs: tuple) -> None:
        if workers < 0:
            raise ValueError(f"workers must be 0 (this process) or more, got {workers}")
        self._pool: ProcessPoolExecutor | None = None
        self._environment = _single_threaded_children()
        if workers == 0:
            initializer(*initargs)
        else:
            self._environment.__enter__()
            self._pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                             initializer=_start_worker,
                                             initargs=(os.getpid(), initializer, initargs))

    def map(self, fn: Callable[..., Any], tasks: Sequence[tuple],
            done: Callable[[int, Any], None] | None = None) -> list[Any]:
        """``done(index, result)`` is called as each task finishes (in completion order)."""
        results: list[Any] = [None] * len(tasks)
        if self._pool is None:
            for index, args in enumerate(tasks):
                results[index] = fn(*args)
                if done:
                    done(index, results[index])
            return results
        futures: dict[Future, int] = {self._pool.submit(fn, *args): index for index, args in enumerate(tasks)}
        for future in as_completed(futures):
            index = futures[future]
            results[index] = future.result()
            if done:
                done(index, results[index])
        return results

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
            self._environment.__exit__(None, None, None)

    def __enter__(self) -> TaskRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
