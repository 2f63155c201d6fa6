"""Write the simulated arms' "true" parameters (config/sim/<arm>_true.json).

Origin: the physically consistent SDP identification of the real WPI recording
of trajectory one (../shared/data/wpi-identification/<arm>/one_results.csv),
then an inertia floor for the simulation: every inertial link gets
``ISOTROPIC_FLOOR`` kg m^2 added to its rotational inertia (isotropic, so the
pseudo-inertia stays positive semidefinite) and every motor inertia is at
least ``MOTOR_FLOOR``; friction offsets are clipped to |Fo| <= Fc (the
simulator applies Fo only while sliding, and a larger one would drive the
joint instead of resisting it). The real recording cannot see the wrist's tiny inertias
(the SDP leaves some at zero, which makes M(q) singular); the floor keeps the
1.5 kHz integration stable and changes the torques by less than the noise.

Usage: .venv/bin/python tools/make_sim_parameters.py [../shared]
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dvrk_ident_ros.data.loaders import load_dataset  # noqa: E402
from dvrk_ident_ros.identify.pipeline import identify  # noqa: E402
from dvrk_ident_ros.model.arm_model import load_model  # noqa: E402

ISOTROPIC_FLOOR = {"mtm": 2e-4, "psm": 2e-4}
MOTOR_FLOOR = 2e-4


def main(argv: list[str]) -> int:
    shared = Path(argv[0]) if argv else REPO.parent / "shared"
    for arm in ("mtm", "psm"):
        model = load_model(arm)
        source = shared / "data" / "wpi-identification" / arm / "one_results.csv"
        result = identify(model, [load_dataset(source, "wpi-csv")], "sdp")
        delta = np.array([result.standard[n] for n in model.parameter_names])
        layout = model.layout
        for start in layout.inertial_blocks.values():  # L = (Lxx, Lxy, Lxz, Lyy, Lyz, Lzz) first in each block
            for k in (0, 3, 5):
                delta[start + k] += ISOTROPIC_FLOOR[arm]
        for i in layout.of_kind("Im"):
            delta[i] = max(delta[i], MOTOR_FLOOR)
        for i in layout.of_kind("Fo"):  # the simulator's friction offset acts while sliding, |Fo| <= Fc
            fc = delta[layout.index("Fc" + layout.names[i][2:])]
            delta[i] = float(np.clip(delta[i], -fc, fc))
        result.standard = dict(zip(model.parameter_names, delta.tolist(), strict=True))
        result.base_values = model.base.from_standard(delta).tolist()
        result.method = "sdp (+ simulation inertia floor, tools/make_sim_parameters.py)"
        result.data = [f"wpi-identification/{arm}/one_results.csv"]
        out = result.save(REPO / "config" / "sim" / f"{arm}_true.json")
        M = model.mass_matrix(model.motor_from_dvrk(np.zeros((1, model.dof)) + 0.1), delta)[0]
        print(f"{out}: min eigenvalue of M at q = 0.1: {np.linalg.eigvalsh(M).min():.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
