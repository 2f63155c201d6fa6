"""One entry for every pose-grid recording MLSE reads: a CUHK directory (:mod:`.data`), a
rosbag2 recording of the player (:mod:`.bags`) or an .npz of the same arrays."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.gc.fitting.bags import load_pose_bag
from dvrk_ident_ros.gc.fitting.data import EFFORTS, PoseData, load_cuhk


def load_poses(path: str | Path, effort: str = "setpoint", **kwargs) -> PoseData:
    """CUHK directory, a rosbag2 recording of the player (directory with metadata.yaml),
    or an .npz with arrays q, tau, joint, direction (auxiliary, sweep optional).

    ``effort`` ("setpoint" or "measured") chooses a bag's effort topic; CUHK files hold only the
    commanded effort (``desired_effort``), so "measured" is refused for them; an .npz's tau is taken
    as it is. ``trim`` (poses left out at each sweep's start and end) defaults to (0, 0) for a bag,
    (2, 1) for a CUHK directory (the original tool's); ``travel`` (a bag's cable state) is a bag's only."""
    if effort not in EFFORTS:
        raise DataError(f"effort {effort!r}: expected one of {', '.join(EFFORTS)}")
    path = Path(path)
    if path.is_dir() and (path / "metadata.yaml").is_file():
        options = {k: v for k, v in kwargs.items() if k in ("std_filter", "trim", "travel")}
        return load_pose_bag(path, effort=effort, **options)
    if path.suffix == ".npz":
        try:
            with np.load(path) as z:
                a = {k: z[k] for k in z.files}
        except (OSError, ValueError) as exc:
            raise DataError(f"{path}: cannot read as .npz: {exc}") from exc
        for key in ("q", "tau", "joint", "direction"):
            if key not in a:
                raise DataError(f"{path}: missing array {key!r}")
        n = len(a["q"])
        ok = np.all(np.isfinite(a["q"]), axis=1) & np.all(np.isfinite(a["tau"]), axis=1)
        data = PoseData(a["q"], a["tau"], a["joint"], a["direction"], a.get("auxiliary", np.zeros(n)),
                        a.get("sweep", np.zeros(n, dtype=int)), str(path))
        data = data.select(ok)
        data.dropped = int(np.sum(~ok))
        return data
    if effort == "measured" and path.is_dir():
        raise DataError(f"{path}: CUHK .mat files hold the commanded effort (desired_effort) only: "
                        "the measured effort is for rosbag2 recordings")
    # no motion between the poses is recorded there: nothing to weigh a pose by its cable's state (travel)
    return load_cuhk(path, **{k: v for k, v in kwargs.items() if k in ("std_filter", "trim")})
