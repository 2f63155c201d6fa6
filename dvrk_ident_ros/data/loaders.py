"""Loading recordings into a Dataset (motor coordinates).

Formats:
- ``wpi-csv``: no header, 21 columns q1..q7, dq1..dq7, tau1..tau7 in motor
  coordinates, uniform rate (default 200 Hz), as in the WPI recordings;
- ``csv``: a header naming ``t`` (optional), ``q1..qn``, ``dq1..dqn`` (optional),
  ``tau1..taun``;
- ``npz``: arrays ``q``, ``tau`` and optionally ``t``, ``qd``;
- ``bag``: a rosbag2 directory (:func:`dvrk_ident_ros.data.bags.load_bag`): the arm's ``measured_js`` in
  dVRK joint space, cut to the longest PLAYING window of the bag's own arm's player (never another arm's).
"""
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from dvrk_ident_ros.data.dataset import Dataset
from dvrk_ident_ros.errors import DataError

FORMATS = ("wpi-csv", "csv", "npz", "bag")


def detect_format(path: Path) -> str:
    if path.is_dir() and (path / "metadata.yaml").is_file():
        return "bag"
    if path.suffix == ".npz":
        return "npz"
    if path.suffix == ".csv":
        with path.open() as f:
            first = f.readline()
        return "csv" if any(c.isalpha() for c in first.replace("e-", "").replace("e+", "")) else "wpi-csv"
    raise DataError(f"{path}: cannot tell the format from the name; give --format ({', '.join(FORMATS)})")


def _finite(path: Path, **arrays: np.ndarray) -> None:
    for name, a in arrays.items():
        bad = ~np.isfinite(a)
        if bad.any():
            row = int(np.argwhere(bad)[0][0])
            raise DataError(f"{path}: {int(bad.any(axis=1).sum())} row(s) with NaN or infinite {name} "
                            f"(first at data row {row + 1})")


def _read_numeric(path: Path, skiprows: int, what: str) -> np.ndarray:
    """A comma-separated numeric table; unreadable, non-numeric or empty -> DataError."""
    if path.is_file() and path.stat().st_size == 0:
        raise DataError(f"{path}: empty file")
    try:
        data = np.loadtxt(path, delimiter=",", skiprows=skiprows, ndmin=2)
    except OSError as exc:
        raise DataError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    except ValueError as exc:
        raise DataError(f"{path}: not a numeric CSV{what}: {exc}") from exc
    if data.size == 0:
        raise DataError(f"{path}: empty file{' (header only)' if skiprows else ''}")
    return data


def load_wpi_csv(path: Path, joints: int = 7, rate: float = 200.0) -> Dataset:
    data = _read_numeric(path, 0, "")
    if data.shape[1] != 3 * joints:
        raise DataError(f"{path}: {data.shape[1]} columns, expected {3 * joints} (q, dq, tau for {joints} joints)")
    q, qd, tau = data[:, :joints], data[:, joints:2 * joints], data[:, 2 * joints:]
    _finite(path, q=q, dq=qd, tau=tau)
    t = np.arange(len(data)) / rate
    return Dataset(t=t, q=q, qd=qd, tau=tau, source=str(path))


def load_csv(path: Path, joints: int = 7) -> Dataset:
    data = _read_numeric(path, 1, " below its header")
    with path.open() as f:
        header = [h.strip() for h in f.readline().strip().split(",")]
    col = {name: i for i, name in enumerate(header)}

    def block(prefix: str) -> np.ndarray | None:
        """The columns <prefix>1..<prefix>joints; None if all of them are missing."""
        names = [f"{prefix}{j + 1}" for j in range(joints)]
        missing = [n for n in names if n not in col]
        if missing:
            if len(missing) < joints:
                raise DataError(f"{path}: missing column(s) {', '.join(missing)}")
            return None
        return data[:, [col[n] for n in names]]

    def required_block(prefix: str) -> np.ndarray:
        values = block(prefix)
        if values is None:
            raise DataError(f"{path}: missing column(s) {', '.join(f'{prefix}{j + 1}' for j in range(joints))}")
        return values

    q, qd, tau = required_block("q"), block("dq"), required_block("tau")
    t = data[:, col["t"]] if "t" in col else None
    if t is None:
        raise DataError(f"{path}: missing column t (time, s)")
    _finite(path, q=q, tau=tau, **({"dq": qd} if qd is not None else {}))
    if qd is None:
        qd = np.gradient(q, t, axis=0)
    return Dataset(t=t, q=q, qd=qd, tau=tau, source=str(path))


def load_npz(path: Path, joints: int = 7) -> Dataset:
    try:
        with np.load(path) as z:
            arrays = {k: z[k] for k in z.files}
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: cannot read as .npz: {exc}") from exc
    for key in ("q", "tau", "t"):
        if key not in arrays:
            raise DataError(f"{path}: missing array {key!r}")
    q, tau, t = arrays["q"], arrays["tau"], arrays["t"]
    if q.ndim != 2 or q.shape[1] != joints:
        raise DataError(f"{path}: q has shape {q.shape}, expected (N, {joints})")
    qd = arrays.get("qd")
    if qd is None:
        qd = np.gradient(q, t, axis=0)
    _finite(path, q=q, dq=qd, tau=tau)
    return Dataset(t=t, q=q, qd=qd, tau=tau, source=str(path))


def load_dataset(path: str | Path, fmt: str | None = None, joints: int = 7,
                 dvrk_from_motor: np.ndarray | None = None) -> Dataset:
    """Load a recording; ``fmt`` is one of FORMATS or None to detect it.

    Bags hold dVRK joint space and need the arm's coupling ``dvrk_from_motor``
    (A) to convert to motor space; the other formats are in motor space.
    """
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file")
    fmt = fmt or detect_format(path)
    if fmt == "bag":
        from dvrk_ident_ros.data.bags import load_bag

        if dvrk_from_motor is None:
            raise DataError(f"{path}: a bag needs the arm's coupling matrix to convert to motor space")
        return load_bag(path, dvrk_from_motor)
    loaders: dict[str, Callable[[Path, int], Dataset]] = {"wpi-csv": load_wpi_csv, "csv": load_csv, "npz": load_npz}
    if fmt not in loaders:
        raise DataError(f"{path}: unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    return loaders[fmt](path, joints)
