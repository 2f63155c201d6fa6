"""Synthetic recordings from the model itself: for tests, benchmarks and the simulator's seeds."""
from __future__ import annotations

import numpy as np

from dvrk_ident_ros.data.dataset import Dataset
from dvrk_ident_ros.excitation.fourier import FourierTrajectory
from dvrk_ident_ros.identify.sdp import parameter_bounds
from dvrk_ident_ros.model.arm_model import ArmModel
from dvrk_ident_ros.model.physical import barycentric_from_physical


def plausible_parameters(model: ArmModel, rng: np.random.Generator) -> np.ndarray:
    """Physically consistent standard parameters inside the description's bounds."""
    layout = model.layout
    delta = np.zeros(len(layout))
    bounds = parameter_bounds(model)
    links = (model.description.bounds or {}).get("links") or {}
    typical = {"Fv": (0.0, 0.05), "Fc": (0.0, 0.05), "Fo": (-0.05, 0.05), "Im": (0.0, 0.01)}
    for name, kind in zip(layout.names, layout.kinds, strict=True):
        lo, hi = bounds.get(name, (-np.inf, np.inf))
        if kind == "K":  # a quarter of the stiffness bound: MTM K5 ~ 250 N/m
            value = rng.uniform(0.2, 0.3) * (hi if np.isfinite(hi) else 0.2)
        elif kind in typical:
            t_lo, t_hi = typical[kind]
            value = rng.uniform(max(lo, t_lo), min(hi, t_hi))
        else:
            continue
        delta[layout.index(name)] = value
    for link, start in layout.inertial_blocks.items():
        spec = links.get(link, {})
        m_lo, m_hi = spec.get("mass", (0.2, 2.0))
        mass = rng.uniform(m_lo, m_lo + 0.5 * (m_hi - m_lo))
        com = np.array([rng.uniform(lo, hi) for lo, hi in spec.get("com", [(-0.05, 0.05)] * 3)])
        rot, _ = np.linalg.qr(rng.normal(size=(3, 3)))
        second = rot @ np.diag(rng.uniform(2e-4, 4e-3, 3) * mass) @ rot.T
        inertia = np.trace(second) * np.eye(3) - second
        delta[start:start + 10] = barycentric_from_physical(mass, com, inertia)
    return delta


def random_fourier(model: ArmModel, rng: np.random.Generator, base_frequency: float = 0.1,
                   harmonics: int = 6, amplitude: float = 0.3) -> FourierTrajectory:
    n = model.dof
    return FourierTrajectory(base_frequency, rng.uniform(-0.3, 0.3, n),
                             rng.normal(0, amplitude, (harmonics, n)), rng.normal(0, amplitude, (harmonics, n)))


def synthetic_recording(model: ArmModel, delta: np.ndarray, trajectory: FourierTrajectory, *, rate: float = 200.0,
                        duration: float | None = None, noise: np.ndarray | float = 0.0,
                        rng: np.random.Generator | None = None) -> tuple[Dataset, np.ndarray]:
    """Motor torques of the model along a trajectory (+ optional Gaussian torque noise).

    Returns the dataset (q, qd, tau; qdd left to processing) and the exact qdd.
    """
    duration = duration or trajectory.period
    t = np.arange(0.0, duration, 1.0 / rate)
    q, qd, qdd = trajectory.evaluate(t)
    tau = model.torques(q, qd, qdd, delta)
    if np.any(np.asarray(noise) > 0):
        rng = rng or np.random.default_rng()
        tau = tau + rng.normal(size=tau.shape) * noise
    return Dataset(t=t, q=q, qd=qd, tau=tau, source="synthetic"), qdd
