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

import numpy as np
from sympy.printing.c import C99CodePrinter

from dvrk_ident_ros.model import codegen, symbolic
from dvrk_ident_ros.model.arm_model import ArmModel

_PROGRAMS = ("regressor", "inertia", "gravity", "known")
_LIBRARY_VERSION = 3  # bump when _PROGRAMS or the C printer change


class _Printer(C99CodePrinter):
    def _print_Float(self, expr):  # noqa: N802 - sympy printer protocol
        return repr(float(expr))


def _c_function(program: symbolic.Program, motor_names: tuple[str, ...]) -> str:
    printer = _Printer()
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


class CompiledModel:
    """C versions of ``regressor``, ``inertia``, ``gravity`` and ``known`` for one sample.

    The arguments are copied into buffers allocated once, whose addresses are passed as plain integers:
    no allocation and no ctypes pointer object per call (converting four arrays with ``data_as`` cost more
    than the C program itself, about 45 us of a 1.5 kHz simulation step's 300).
    """

    def __init__(self, library: ctypes.CDLL, dof: int, params: int):
        self.dof, self.params = dof, params
        self._lib = library
        for name in _PROGRAMS:
            getattr(library, name).argtypes = [ctypes.c_void_p] * 4
            getattr(library, name).restype = None
        self._q, self._qd, self._qdd, self._zeros = (np.zeros(dof) for _ in range(4))
        self._out = np.zeros((dof, params))
        self._known_out = np.zeros(dof)
        # the addresses once: ndarray.ctypes.data itself costs about 2 us a call
        self._q_at, self._qd_at, self._qdd_at, self._zeros_at, self._out_at, self._known_out_at = (
            a.ctypes.data for a in (self._q, self._qd, self._qdd, self._zeros, self._out, self._known_out))
        self._regressor, self._inertia, self._gravity = library.regressor, library.inertia, library.gravity
        self._known = library.known

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
        (the NumPy module's ``known`` costs about 80 us for one sample, the simulator's largest item)."""
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
        motors = tuple(m.name for m in model.description.motor_symbols)
        programs = {p.name: p for p in symbolic.all_programs(model.description)}
        source = "#include <math.h>\n\n" + "\n\n".join(_c_function(programs[n], motors) for n in _PROGRAMS)
        c_path = directory / f"{model.description.arm}_{key}_c.c"
        c_path.write_text(source)
        tmp = library_path.with_suffix(f".tmp{os.getpid()}.so")
        result = subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", str(tmp), str(c_path), "-lm"],
                                capture_output=True, text=True)
        if result.returncode != 0:
            return None
        os.replace(tmp, library_path)
    try:
        library = ctypes.CDLL(str(Path(library_path)))
    except OSError:
        return None
    return CompiledModel(library, model.dof, len(model.layout))
