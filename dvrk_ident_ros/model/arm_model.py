"""ArmModel: the validated description plus its compiled functions, loaded from cache.

The numerical module is generated once per description (symbolic derivation
in :mod:`.symbolic`, printed by :mod:`.codegen`) and cached on disk under a
key that hashes the description and the generator's own source, so a changed
description or generator never reuses a stale model.
"""
from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

from dvrk_ident_ros.cache import (
    cache_directory,
    import_file,
    source_file,
    writable_directory,
    write_text_atomically,
)
from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.model.base_parameters import BaseParameters, compute_base_parameters
from dvrk_ident_ros.model.description import ArmDescription, load_description
from dvrk_ident_ros.model.parameters import ParameterLayout, parameter_layout

_BASE_SAMPLES = 200
_BASE_SEED = 20190426


#: The model generator's sources: a change to either (codegen.GENERATOR_VERSION included) rebuilds every model.
_GENERATOR_MODULES = ("dvrk_ident_ros.model.symbolic", "dvrk_ident_ros.model.codegen")


def _generator_fingerprint() -> str:
    """Hash of the generator's sources, read without importing them: sympy is loaded on a cache miss only
    (a node starts sooner: docs/results.md)."""
    h = hashlib.sha256()
    for name in _GENERATOR_MODULES:
        h.update(source_file(name).read_bytes())
    return h.hexdigest()


@dataclass(frozen=True)
class BuildInfo:
    cache_key: str
    cache_used: bool
    seconds: float
    module_path: Path


class ArmModel:
    """Dynamics of one arm in motor coordinates: tau^m = H(q, qd, qdd) delta + tau_known(q)."""

    def __init__(self, description: ArmDescription, module: ModuleType, base: BaseParameters, info: BuildInfo):
        self.description = description
        self.layout: ParameterLayout = parameter_layout(description)
        self.base = base
        self.build = info
        self._m = module
        self.dof = description.dof
        self.A = description.dvrk_from_motor
        self.A_inv = np.linalg.inv(self.A)

    # -- parameters ----------------------------------------------------------
    @property
    def parameter_names(self) -> tuple[str, ...]:
        return self.layout.names

    @property
    def base_parameter_names(self) -> list[str]:
        return self.base.describe(self.layout.names)

    # -- input checks ----------------------------------------------------------
    def _states(self, *arrays: np.ndarray) -> list[np.ndarray]:
        out = []
        for a in arrays:
            a = np.asarray(a)
            if a.ndim == 1:
                a = a[None, :]
            if a.ndim != 2 or a.shape[1] != self.dof:
                raise DataError(f"{self.description.arm}: expected states of {self.dof} joints, got shape {a.shape}")
            out.append(a)
        return out

    # -- dynamics ----------------------------------------------------------------
    def regressor(self, q, qd, qdd) -> np.ndarray:
        """H (N x n x P): motor torques per standard parameter (eq. 15)."""
        return self._m.regressor(*self._states(q, qd, qdd))

    def base_regressor(self, q, qd, qdd) -> np.ndarray:
        """H_b (N x n x r) such that H delta = H_b delta_b (eq. 16)."""
        return self.regressor(q, qd, qdd)[:, :, self.base.independent]

    def rebase(self, indices, values) -> np.ndarray:
        """Base parameters expressed on other independent columns ``indices`` -> this model's.

        Pivoted QR may keep a different column of a group of equivalent ones when the
        generated code rounds differently (a tie at 1e-16); both choices span the same
        space, so H[:, indices] values = H_b delta_b has one exact solution, found by
        least squares on random states (every column of H lies in the span of H_b, so
        the residual only checks the arithmetic). A DataError for columns this model lacks.
        """
        indices = np.asarray(indices, dtype=int)
        values = np.asarray(values, dtype=float)
        if indices.shape != values.shape or indices.min(initial=0) < 0 \
                or indices.max(initial=0) >= len(self.parameter_names):
            raise DataError(f"{self.description.arm}: {len(values)} base values on columns {indices.tolist()[:5]}...: "
                            "not base parameters of this model")
        q, qd, qdd = _random_states(self.dof, 40, 12345)
        H = self.regressor(q, qd, qdd).reshape(-1, len(self.parameter_names))
        theirs = H[:, indices] @ values
        ours, *_ = np.linalg.lstsq(H[:, self.base.independent], theirs, rcond=None)
        residual = np.linalg.norm(H[:, self.base.independent] @ ours - theirs)
        if residual > 1e-9 * max(float(np.linalg.norm(theirs)), 1e-300):
            raise DataError(f"{self.description.arm}: the base parameters of the installed model differ from "
                            f"those of the parameter file (relative residual {residual / np.linalg.norm(theirs):.1e})")
        return ours

    def known_torques(self, q) -> np.ndarray:
        """Torques modelled but not identified (the MTM joint-4 cable), N x n."""
        (q,) = self._states(q)
        if not hasattr(self._m, "known") or not self.description.known_torques:
            return np.zeros(q.shape, dtype=q.dtype)
        return self._m.known(q)

    def torques(self, q, qd, qdd, delta) -> np.ndarray:
        """Motor torques N x n for standard parameters delta (known torques included)."""
        return self.regressor(q, qd, qdd) @ np.asarray(delta) + self.known_torques(q)

    def mass_matrix(self, q, delta) -> np.ndarray:
        """M(q) (N x n x n), motor inertia included: column j = inertial torques for qdd = e_j."""
        (q,) = self._states(q)
        N, n = q.shape
        qq = np.repeat(q, n, axis=0)
        qdd = np.tile(np.eye(n), (N, 1))
        tau = self._m.inertia(qq, qdd) @ np.asarray(delta)
        tau += self._motor_inertia(qdd, delta)
        return tau.reshape(N, n, n).transpose(0, 2, 1)

    def _motor_inertia(self, qdd: np.ndarray, delta) -> np.ndarray:
        delta = np.asarray(delta)
        out = np.zeros(qdd.shape, dtype=np.result_type(qdd, delta))
        d = self.description
        elements = [(f.name, f.joint_coordinate) for f in d.frames if f.motor_inertia]
        elements += [(dr.name, dr.coordinate) for dr in d.drives if dr.motor_inertia]
        for owner, coord in elements:
            im = delta[self.layout.index(f"Im{owner}")]
            out += np.outer(qdd @ coord.coefficients, coord.coefficients) * im
        return out

    def coriolis(self, q, qd, delta) -> np.ndarray:
        """C(q, qd) qd (N x n): centrifugal and Coriolis torques."""
        return self._m.coriolis(*self._states(q, qd)) @ np.asarray(delta)

    def gravity(self, q, delta) -> np.ndarray:
        """g(q) (N x n): gravity and springs, without the known (cable) torques."""
        return self._m.gravity(*self._states(q)) @ np.asarray(delta)

    def gravity_regressor(self, q) -> np.ndarray:
        return self._m.gravity(*self._states(q))

    def forward_kinematics(self, q) -> np.ndarray:
        """Base-frame poses of every frame, N x frames x 4 x 4 (frame order of the description)."""
        return self._m.fk(*self._states(q))

    # -- joint spaces (q^d = A q^m, tau^m = A^T tau^d) -----------------------------
    def motor_from_dvrk(self, q_dvrk) -> np.ndarray:
        return np.asarray(q_dvrk) @ self.A_inv.T

    def dvrk_from_motor(self, q_motor) -> np.ndarray:
        return np.asarray(q_motor) @ self.A.T

    def motor_torque_from_dvrk(self, tau_dvrk) -> np.ndarray:
        return np.asarray(tau_dvrk) @ self.A

    def dvrk_torque_from_motor(self, tau_motor) -> np.ndarray:
        return np.asarray(tau_motor) @ self.A_inv


def _random_states(n: int, samples: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.uniform(-np.pi, np.pi, (samples, n)), rng.normal(0, 1, (samples, n)),
            rng.normal(0, 1, (samples, n)))


def load_model(arm_or_path: str | Path | ArmDescription, *, use_cache: bool = True,
               cache_dir: Path | None = None) -> ArmModel:
    """Load the model of an arm (name, description path or description); build it on a cache miss."""
    start = time.perf_counter()
    description = arm_or_path if isinstance(arm_or_path, ArmDescription) else load_description(arm_or_path)
    key = hashlib.sha256((description.content_hash + _generator_fingerprint()).encode()).hexdigest()[:20]
    directory = Path(cache_dir) if cache_dir is not None else cache_directory()
    module_path = directory / f"{description.arm}_{key}.py"
    base_path = directory / f"{description.arm}_{key}_base.npz"
    cache_used = use_cache and module_path.is_file() and base_path.is_file()
    if cache_used:
        try:
            module = import_file(module_path, f"dvrk_ident_model_{key}")
            with np.load(base_path) as z:
                base = BaseParameters(z["independent"], z["dependent"], z["beta"], z["diagonal"])
        except Exception:  # noqa: BLE001 - a corrupt cache entry is rebuilt, never trusted
            cache_used = False
    if not cache_used:
        from dvrk_ident_ros.model import codegen, symbolic  # sympy: only to build

        programs = symbolic.all_programs(description)
        header = (f"Generated by dvrk_ident from {description.path.name} (key {key}). Do not edit.\n\n"
                  f"Functions: {', '.join(p.name for p in programs)}; inputs (N x n) motor coordinates.")
        source = codegen.print_module(programs, tuple(m.name for m in description.motor_symbols), header)
        directory = writable_directory(directory)
        module_path, base_path = directory / module_path.name, directory / base_path.name
        write_text_atomically(module_path, source)
        module = import_file(module_path, f"dvrk_ident_model_{key}")
        q, qd, qdd = _random_states(description.dof, _BASE_SAMPLES, _BASE_SEED)
        W = module.regressor(q, qd, qdd).reshape(-1, len(parameter_layout(description)))
        base = compute_base_parameters(W)
        tmp = base_path.with_suffix(f".tmp{os.getpid()}.npz")
        np.savez(tmp, independent=base.independent, dependent=base.dependent, beta=base.beta,
                 diagonal=base.diagonal)
        os.replace(tmp, base_path)
    info = BuildInfo(key, cache_used, time.perf_counter() - start, module_path)
    return ArmModel(description, module, base, info)
