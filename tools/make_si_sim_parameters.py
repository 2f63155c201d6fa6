"""Write the "true" parameters of the simulated Si arms and the Classic ECM (config/sim/<arm>_true.json).

A real Si arm differs from the dVRK console's hand-set physical file (config/console_gc/<arm>.json, the
numbers of sawIntuitiveResearchKit's share/kinematic/*_physical.json) as two arms differ; the Classic ECM, which
no dVRK file gives masses for, from the masses chosen in config/console_gc/ecm_classic.json likewise: every link's mass
off by up to ``MASS_SPREAD`` and its centre of mass by ``COM_SPREAD`` m (normal, per axis), fixed seed. The
links' rotational inertias, which the console's file does not give, are a solid sphere's of radius
``RADIUS`` about the centre of mass, plus the simulator's isotropic floor (tools/make_sim_parameters.py).
Everything the Si shares with the Classic arm (the instrument's links, motors, springs, the joints' friction)
is taken from the Classic arm's simulated truth (config/sim/<classic>_true.json), by parameter name.

Usage: .venv/bin/python tools/make_si_sim_parameters.py [ARM ...]   (default: every arm below)
"""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from dvrk_ident_ros.gc.model.console_gc import load_chain  # noqa: E402
from dvrk_ident_ros.identify.results import IdentificationResult  # noqa: E402
from dvrk_ident_ros.model.arm_model import load_model  # noqa: E402
from dvrk_ident_ros.model.physical import barycentric_from_physical  # noqa: E402

MASS_SPREAD = 0.15
COM_SPREAD = 0.01  # m
RADIUS = 0.05  # m
ISOTROPIC_FLOOR = 2e-4
#: per Si arm: the Classic arm whose truth it shares, and which description frame each chain link is
ARMS = {
    "psm_si": ("psm", {"yaw": "1", "pitch1": "2", "pitch2": "2'", "pitch3": "2''", "insertion2": "3"}),
    # the ECM Si's joints' friction as the Classic PSM's joints 1-4; its endoscope (the console's insertion
    # link) on the roll's frame
    "ecm_si": ("psm", {"yaw": "1", "pitch1": "2", "pitch2": "2'", "pitch3": "2''", "insertion": "4"}),
    "ecm_classic": ("psm", {"yaw": "1", "pitch": "2", "insertion": "4"}),
}
#: links whose mass is not perturbed, and bodies set outright (frame: mass kg, centre m): the ECM Si's sliding
#: mass is the console's endoscope table's (1.8 kg, Si HD), the carriage 50 g of it, the endoscope the rest
KEEP_MASS = {"ecm_si": {"insertion": 1.75}, "ecm_classic": {"insertion": 1.45}}
BODIES = {"ecm_si": {"3": (0.05, (0.0, 0.0, 0.0))}, "ecm_classic": {"3": (0.05, (0.0, 0.0, 0.0))}}
#: links whose centre of mass stays on their frame's z axis (the ECM's endoscope, about its roll)
ON_AXIS = {"ecm_si": ("insertion",), "ecm_classic": ("insertion",)}
#: a chain link's centre in its description frame where the two differ (m): the Classic ECM's roll frame is the
#: insertion frame moved along its z axis by ECM.json's D
COM_SHIFT = {"ecm_classic": {"insertion": (0.0, 0.0, -0.3829)}}


def _set_body(standard: dict[str, float], frame: str, mass: float, com: np.ndarray) -> None:
    """A link's 10 inertial parameters: ``mass`` at ``com`` (its frame), a solid sphere's inertia plus the floor."""
    inertia = (0.4 * mass * RADIUS ** 2 + ISOTROPIC_FLOOR) * np.eye(3)
    values = barycentric_from_physical(mass, com, inertia)
    names = [f"L{frame}{k}" for k in ("xx", "xy", "xz", "yy", "yz", "zz")] + [f"l{frame}{k}" for k in "xyz"] + \
        [f"m{frame}"]
    for name, value in zip(names, values, strict=True):
        standard[name] = float(value)


def main(arms: list[str]) -> int:
    for arm in arms or list(ARMS):
        classic, frames = ARMS[arm]
        model = load_model(arm)
        classic_result = IdentificationResult.load(REPO / "config" / "sim" / f"{classic}_true.json")
        chain = load_chain(REPO / "config" / "console_gc" / f"{arm}.json")
        rng = np.random.default_rng(2026)
        standard = {name: float(classic_result.standard.get(name, 0.0)) for name in model.parameter_names}
        for link in chain.links:
            if link.name not in frames:
                continue
            frame = frames[link.name]
            spread = 1.0 + rng.uniform(-MASS_SPREAD, MASS_SPREAD)
            mass = KEEP_MASS.get(arm, {}).get(link.name, link.mass * spread)
            com = np.asarray(link.com) + rng.normal(scale=COM_SPREAD, size=3)
            com = com + np.asarray(COM_SHIFT.get(arm, {}).get(link.name, (0.0, 0.0, 0.0)))
            if link.name in ON_AXIS.get(arm, ()):
                com[:2] = 0.0  # an endoscope is a cylinder about its roll axis
            _set_body(standard, frame, mass, com)
        for frame, (mass, com) in BODIES.get(arm, {}).items():
            _set_body(standard, frame, mass, np.asarray(com))
        delta = np.array([standard[name] for name in model.parameter_names])
        result = replace(
            classic_result, arm=arm, description_hash=model.description.content_hash,
            method=f"chosen: the console's physical file perturbed (tools/make_si_sim_parameters.py); the rest as "
                   f"{classic}_true.json", base_values=model.base.from_standard(delta).tolist(),
            base_definitions=model.base_parameter_names, base_indices=[int(i) for i in model.base.independent],
            standard=standard, base_std=None, data=[], plausibility={}, gravity_refit={})
        out = result.save(REPO / "config" / "sim" / f"{arm}_true.json")
        M = model.mass_matrix(model.motor_from_dvrk(np.zeros((1, model.dof)) + 0.1), delta)[0]
        print(f"{out}: min eigenvalue of M at q = 0.1: {np.linalg.eigvalsh(M).min():.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
