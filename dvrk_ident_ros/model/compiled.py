"""The model's programs as C, compiled once per model into the cache (optional speed-up).

For one sample at a time (the simulator's integration loop) the vectorised
NumPy module pays about a microsecond per operation; the same straight-line
programs printed as C and compiled with the system's C compiler run in
microseconds. Without a compiler :func:`load_compiled` returns None and the
NumPy module is used.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from dvrk_ident_ros.model.arm_model import ArmModel

if TYPE_CHECKING:
    from sympy.printing.c import C99CodePrinter

    from dvrk_ident_ros.model.symbolic import Program

_PROGRAMS = ("regressor", "inertia", "gravity", "known")
_LIBRARY_VERSION = 5  # bump when _PROGRAMS, the C printer or _EULER_STEP change

#: One semi-implicit Euler step of the simulator (sim/physics.py ArmPhysics.step_euler, which documents it and
#: keeps the NumPy version): h = H(q, qd, 0) rigid + known + friction(qd); (M + dt D) x = tau - h, D the smooth
#: Coulomb friction's Jacobian; qd' = qd + dt x, q' = q + dt qd'. The solve is Gaussian elimination with partial
#: pivoting (the matrix is symmetric positive definite, n is 7 or 8). N and P are defined before it.
_EULER_STEP = r"""
int euler_step(const double *q, const double *qd, const double *tau, const double *M, const double *known,
               const double *rigid, const double *C, const double *fv, const double *fc, const double *fo,
               int n_friction, const double *coulomb_velocity, double dt, double *H, double *q_out, double *qd_out) {
  double zeros[N] = {0.0}, h[N], A[N][N], b[N];
  regressor(q, qd, zeros, H);
  for (int i = 0; i < N; ++i) {
    double sum = known[i];
    for (int k = 0; k < P; ++k) sum += H[i * P + k] * rigid[k];
    h[i] = sum;
    for (int j = 0; j < N; ++j) A[i][j] = M[i * N + j];
  }
  for (int e = 0; e < n_friction; ++e) {
    const double *c = C + e * N;
    double v = 0.0;
    for (int j = 0; j < N; ++j) v += c[j] * qd[j];
    const double vs = coulomb_velocity[e], x = v / vs, slip = tanh(x);
    const double force = fv[e] * v + fc[e] * slip + fo[e] * fabs(slip);
    const double ex = exp(-2.0 * fabs(x)), sech2 = 4.0 * ex / ((1.0 + ex) * (1.0 + ex));
    double slope = fv[e] + (fc[e] + fo[e] * ((v > 0.0) - (v < 0.0))) / vs * sech2;
    if (slope < 0.0) slope = 0.0;
    for (int j = 0; j < N; ++j) {
      h[j] += c[j] * force;
      for (int k = 0; k < N; ++k) A[j][k] += dt * c[j] * slope * c[k];
    }
  }
  for (int i = 0; i < N; ++i) b[i] = tau[i] - h[i];
  for (int col = 0; col < N; ++col) {
    int pivot = col;
    for (int r = col + 1; r < N; ++r) if (fabs(A[r][col]) > fabs(A[pivot][col])) pivot = r;
    if (A[pivot][col] == 0.0) return 1;
    if (pivot != col) {
      for (int k = 0; k < N; ++k) { const double t = A[col][k]; A[col][k] = A[pivot][k]; A[pivot][k] = t; }
      const double t = b[col]; b[col] = b[pivot]; b[pivot] = t;
    }
    for (int r = col + 1; r < N; ++r) {
      const double f = A[r][col] / A[col][col];
      for (int k = col; k < N; ++k) A[r][k] -= f * A[col][k];
      b[r] -= f * b[col];
    }
  }
  for (int i = N - 1; i >= 0; --i) {
    double sum = b[i];
    for (int k = i + 1; k < N; ++k) sum -= A[i][k] * b[k];
    b[i] = sum / A[i][i];
  }
  for (int i = 0; i < N; ++i) {
    qd_out[i] = qd[i] + dt * b[i];
    q_out[i] = q[i] + dt * qd_out[i];
  }
  return 0;
}
"""


def _c_source(model: ArmModel) -> str:
    """The C source of the model's programs and the Euler step. sympy is imported here, on a cache miss only:
    a process that finds the library in the cache starts without it."""
    from sympy.printing.c import C99CodePrinter

    from dvrk_ident_ros.model import symbolic

    class Printer(C99CodePrinter):
        def _print_Float(self, expr):  # noqa: N802 - sympy printer protocol
            return repr(float(expr))

    printer = Printer()
    motors = tuple(m.name for m in model.description.motor_symbols)
    programs = {p.name: p for p in symbolic.all_programs(model.description)}
    source = "#include <math.h>\n\n" + "\n\n".join(_c_function(programs[n], motors, printer) for n in _PROGRAMS)
    return source + f"\n\n#define N {model.dof}\n#define P {len(model.layout)}\n{_EULER_STEP}"


def _c_function(program: Program, motor_names: tuple[str, ...], printer: C99CodePrinter) -> str:
    from dvrk_ident_ros.model import codegen

    keys, replacements, reduced, body = codegen.reduce_program(program)
    shape = program.output_shape
    lines = [f"void {program.name}(const double *q, const double *qd, const double *qdd, double *out) {{"]
    for arg, prefix in (("q", ""), ("qd", "d"), ("qdd", "dd")):
        for j, m in enumerate(motor_names):
            lines.append(f"  const double {prefix}{m} = {arg}[{j}];")
    for sym, expr in [*body, *replacements]:
        lines.append(f"  const double {sym.name} = {printer.doprint(expr)};")
    size = int(np.prod(shape))
    lines.append(f"  for (int i = 0; i < {size}; ++i) out[i] = 0.0;")
    for key, expr in zip(keys, reduced, strict=True):
        flat = int(np.ravel_multi_index(key, shape))
        lines.append(f"  out[{flat}] = {printer.doprint(expr)};")
    lines.append("}")
    return "\n".join(lines)


class EulerStep:
    """The compiled semi-implicit Euler step (``_EULER_STEP``) with one arm's constants: the rigid-body
    parameters (friction zeroed), the friction elements (velocity map C, Fv, Fc, Fo) and the smooth Coulomb
    velocity of each (one number: every element's). Arguments go through buffers allocated once, as
    :class:`CompiledModel`'s."""

    def __init__(self, model: CompiledModel, rigid: np.ndarray, C: np.ndarray, fv: np.ndarray, fc: np.ndarray,
                 fo: np.ndarray, coulomb_velocity: float | np.ndarray):
        n = model.dof
        C = C.reshape(-1, n)
        if C.shape[0] and not len(fv) == len(fc) == len(fo) == C.shape[0]:
            raise ValueError(f"{C.shape[0]} friction elements, {len(fv)}/{len(fc)}/{len(fo)} Fv/Fc/Fo values")
        velocity = np.asarray(coulomb_velocity, dtype=float)
        if velocity.ndim == 0:
            velocity = np.full(C.shape[0], float(velocity))
        if velocity.shape != (C.shape[0],):
            raise ValueError(f"{C.shape[0]} friction elements, {velocity.size} Coulomb velocities")
        self._constants = [np.ascontiguousarray(a, dtype=float) for a in (rigid, C, fv, fc, fo, velocity)]
        self._q, self._qd, self._tau, self._known, self.q_out, self.qd_out = (np.zeros(n) for _ in range(6))
        self._M = np.zeros((n, n))
        self._H = np.zeros((n, model.params))
        step = model.library.euler_step
        kinds: list[type] = [ctypes.c_void_p] * 10 + [ctypes.c_int, ctypes.c_void_p, ctypes.c_double]
        step.argtypes = kinds + [ctypes.c_void_p] * 3
        step.restype = ctypes.c_int
        self._step = step
        self._head = [a.ctypes.data for a in (self._q, self._qd, self._tau, self._M, self._known,
                                              *self._constants[:5])]
        self._n_friction = C.shape[0]  # no rows: friction off (the C program then reads no Fv, Fc, Fo)
        self._coulomb_velocity = self._constants[5].ctypes.data
        self._tail = [a.ctypes.data for a in (self._H, self.q_out, self.qd_out)]

    def __call__(self, q: np.ndarray, qd: np.ndarray, tau: np.ndarray, M: np.ndarray, known: np.ndarray,
                 dt: float) -> bool:
        """One step into ``q_out``, ``qd_out`` (reused buffers); False if the matrix was singular."""
        self._q[:], self._qd[:], self._tau[:], self._M[:], self._known[:] = q, qd, tau, M, known
        return self._step(*self._head, self._n_friction, self._coulomb_velocity, dt, *self._tail) == 0


class CompiledModel:
    """C versions of ``regressor``, ``inertia``, ``gravity`` and ``known`` for one sample.

    The arguments are copied into buffers allocated once, whose addresses are passed as plain integers:
    no allocation and no ctypes pointer object per call (converting four arrays with ``data_as`` cost more
    than the C program itself: docs/results.md, "The simulator").
    """

    def __init__(self, library: ctypes.CDLL, dof: int, params: int):
        self.dof, self.params = dof, params
        self.library = library
        for name in _PROGRAMS:
            getattr(library, name).argtypes = [ctypes.c_void_p] * 4
            getattr(library, name).restype = None
        self._q, self._qd, self._qdd, self._zeros = (np.zeros(dof) for _ in range(4))
        self._out = np.zeros((dof, params))
        self._known_out = np.zeros(dof)
        # the addresses once: ndarray.ctypes.data itself costs time on every call
        self._q_at, self._qd_at, self._qdd_at, self._zeros_at, self._out_at, self._known_out_at = (
            a.ctypes.data for a in (self._q, self._qd, self._qdd, self._zeros, self._out, self._known_out))
        self._regressor, self._inertia, self._gravity = library.regressor, library.inertia, library.gravity
        self._known = library.known

    def euler_step(self, rigid: np.ndarray, C: np.ndarray, fv: np.ndarray, fc: np.ndarray, fo: np.ndarray,
                   coulomb_velocity: float | np.ndarray) -> EulerStep:
        """The simulator's compiled integration step with these constants (see :class:`EulerStep`)."""
        return EulerStep(self, rigid, C, fv, fc, fo, coulomb_velocity)

    def regressor(self, q: np.ndarray, qd: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        """H (n x P) at one state (a view into a buffer reused by the next call)."""
        self._q[:], self._qd[:], self._qdd[:] = q, qd, qdd  # checked length, converted to float
        self._regressor(self._q_at, self._qd_at, self._qdd_at, self._out_at)
        return self._out

    def inertia(self, q: np.ndarray, qdd: np.ndarray) -> np.ndarray:
        """The inertial regressor (n x P) for acceleration ``qdd`` at rest; a reused buffer, as ``regressor``."""
        self._q[:], self._qdd[:] = q, qdd
        self._inertia(self._q_at, self._zeros_at, self._qdd_at, self._out_at)
        return self._out

    def gravity(self, q: np.ndarray) -> np.ndarray:
        """Gravity (and spring) regressor (n x P) at one position; a reused buffer, as ``regressor``."""
        self._q[:] = q
        self._gravity(self._q_at, self._zeros_at, self._zeros_at, self._out_at)
        return self._out

    def known(self, q: np.ndarray) -> np.ndarray:
        """The known (cable) torques (n,) at one position, motor space; a reused buffer, as ``regressor``
        (the NumPy module's ``known`` for one sample was the simulator step's largest item: docs/results.md)."""
        self._q[:] = q
        self._known(self._q_at, self._zeros_at, self._zeros_at, self._known_out_at)
        return self._known_out


def load_compiled(model: ArmModel) -> CompiledModel | None:
    """The compiled model (built into the cache on first use), or None without a C compiler."""
    compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        return None
    directory = model.build.module_path.parent
    key = model.build.cache_key
    library_path = directory / f"{model.description.arm}_{key}_c{_LIBRARY_VERSION}.so"
    if not library_path.is_file():
        source = _c_source(model)
        # each process its own source and library files (two processes may build the same model at once)
        c_path = directory / f"{model.description.arm}_{key}_c{_LIBRARY_VERSION}.tmp{os.getpid()}.c"
        c_path.write_text(source)
        tmp = library_path.with_suffix(f".tmp{os.getpid()}.so")
        result = subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", str(tmp), str(c_path), "-lm"],
                                capture_output=True, text=True)
        os.replace(c_path, directory / f"{model.description.arm}_{key}_c{_LIBRARY_VERSION}.c")  # kept to read
        if result.returncode != 0:
            return None
        os.replace(tmp, library_path)
    try:
        library = ctypes.CDLL(str(Path(library_path)))
    except OSError:
        return None
    return CompiledModel(library, model.dof, len(model.layout))
