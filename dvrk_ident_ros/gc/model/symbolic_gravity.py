"""The gc file's ten gravity columns, derived symbolically from the core's MTM kinematics.

The potential energy of the MTM's rigid bodies is linear in the standard
parameters (Wang 2019 eqs. 7-9): a first moment l = m r of frame k (in frame k)
contributes P = -g0 . (R_k l) with g0 = [0, 0, -g], R_k the base-frame rotation
of frame k from the core's forward kinematics (:func:`kinematics_program` of
:mod:`dvrk_ident_ros.model.symbolic`). The core's gravity torques are +dP/dq
(the torques that hold the arm, Lagrange eq. 10; test_gc checks this numerically). In dVRK joint coordinates
q^d = A q^m (eq. 3) every gc gravity column theta_j (the gc file's model, Lin 2019
section III, typed in test/test_gc.py) is the gravity column of one standard
parameter of the core, up to a sign: :data:`GC_COLUMNS`, the only typed-in part.
The distal links' masses lump automatically: m_k times an offset along a
proximal frame's axes projects on that frame's first-moment column.

The columns are simplified to products of s2, c2, s23, c23, s4 .. c6 (q3 enters
only through q2 + q3), printed by :func:`generate_source` into a module with a
vectorised NumPy ``gravity_regressor(q, g)`` (N x 7 x 10) and an allocation-free
``gravity_torques(q, theta, out, g=9.81)`` (math.sin/cos and float arithmetic), and
cached like the core's model (:func:`load_generated`, keyed by a hash); sympy runs only on a
cache miss.
"""
from __future__ import annotations

import hashlib
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from dvrk_ident_ros.cache import (
    cache_directory,
    import_file,
    source_file,
    writable_directory,
    write_text_atomically,
)
from dvrk_ident_ros.errors import DescriptionError

if TYPE_CHECKING:
    import sympy
    from sympy.printing.pycode import PythonCodePrinter

    from dvrk_ident_ros.model.description import ArmDescription

ARM = "mtm"
N_JOINTS = 7
N_COLUMNS = 10

#: gc gravity column j (0-based: theta_{j+1}) -> (standard parameter of the core, sign).
#: Found by matching the core's gravity regressor (dVRK joint space) against the
#: gc file's columns (test/test_gc.py) at random poses; every column is exactly one
#: first moment. Other first moments give the same columns (the parallelogram's
#: l3''x = l2x, l3''y = l2y, l3'x = l3x, l3'y = l3y; along joint axes l4z = l3y,
#: l5z = -l4y, l6z = l5y, l7z = l6y): the table names those of the gc links 2-6.
GC_COLUMNS: tuple[tuple[str, int], ...] = (
    ("l2x", 1), ("l2y", 1),
    ("l3x", 1), ("l3y", 1),
    ("l4x", 1), ("l4y", 1),
    ("l5y", 1), ("l5x", 1),
    ("l6y", 1), ("l6x", -1),
)

_GENERATOR_VERSION = "2"
#: The dVRK joints whose sines/cosines appear (1-based), and q2 + q3.
_TRIG_JOINTS = (2, 4, 5, 6)


# -- symbolic derivation ----------------------------------------------------------------------------

def _rational(expr: sympy.Expr) -> sympy.Expr:
    """Floats of the description (0.6697) as exact rationals, so the coupling cancels exactly."""
    import sympy

    return expr.xreplace({f: sympy.Rational(str(f)) for f in expr.atoms(sympy.Float)})


def _trig_symbols() -> dict[str, sympy.Symbol]:
    import sympy

    names = ["s2", "c2", "s23", "c23"] + [f"{t}{i}" for i in _TRIG_JOINTS[1:] for t in "sc"]
    return {name: sympy.Symbol(name, real=True) for name in names}


def gravity_columns_trig(description: ArmDescription | None = None
                         ) -> tuple[sympy.Matrix, dict[str, sympy.Symbol]]:
    """The 7 x 10 gravity columns divided by g, as polynomials in s2, c2, s23, c23, s4, c4, .., c6.

    Returns (matrix, trig symbols by name). Derivation: P_j = sign_j g R_k[2, a]
    for GC_COLUMNS[j] = (l<k><a>, sign_j), differentiated with respect to the
    dVRK coordinates (q^m = A^-1 q^d substituted into the core's kinematics).
    """
    import sympy

    from dvrk_ident_ros.model.description import load_description
    from dvrk_ident_ros.model.parameters import parameter_layout
    from dvrk_ident_ros.model.symbolic import kinematics_program

    d = description if description is not None else load_description(ARM)
    layout = parameter_layout(d)
    program = kinematics_program(d)
    frame_index = {f.name: i for i, f in enumerate(d.frames)}
    qd = sympy.symbols(f"q1:{d.dof + 1}", real=True)
    A = sympy.Matrix(d.dvrk_from_motor.tolist()).applyfunc(lambda x: sympy.Rational(repr(float(x))))
    motor = dict(zip(d.motor_symbols, A.inv() * sympy.Matrix(qd), strict=True))
    gz = -sympy.Rational(repr(float(d.gravity[2])))  # P = -g0 . (R l) = g R[2, :] l for g0 = [0, 0, -g]
    if gz != sympy.Rational(981, 100):
        raise DescriptionError(f"{d.path}: the gc format assumes gravity along -z, got {d.gravity}")

    # the third row of each needed frame's base rotation, by back-substitution of the SSA program
    wanted = {}
    for name, _ in GC_COLUMNS:
        i = layout.index(name)
        frame = layout.owners[i]
        if layout.kinds[i] != "l":
            raise DescriptionError(f"gc column {name}: only first moments carry the gc gravity columns")
        wanted[name] = program.outputs[(frame_index[frame], 2, "xyz".index(name[-1]))]
    definitions = dict(program.assignments)
    expanded: dict = {}

    def expand(expr):
        subs = {}
        for s in expr.free_symbols:
            if s in definitions:
                if s not in expanded:
                    expanded[s] = expand(definitions[s])
                subs[s] = expanded[s]
        return expr.xreplace(subs)

    u = sympy.Symbol("u", real=True)  # q2 + q3
    t = _trig_symbols()
    to_trig = {sympy.sin(qd[1]): t["s2"], sympy.cos(qd[1]): t["c2"], sympy.sin(u): t["s23"], sympy.cos(u): t["c23"]}
    for i in _TRIG_JOINTS[1:]:
        to_trig[sympy.sin(qd[i - 1])] = t[f"s{i}"]
        to_trig[sympy.cos(qd[i - 1])] = t[f"c{i}"]
    gens = list(t.values())
    pythagoras = [t["s2"] ** 2 + t["c2"] ** 2 - 1, t["s23"] ** 2 + t["c23"] ** 2 - 1]
    pythagoras += [t[f"s{i}"] ** 2 + t[f"c{i}"] ** 2 - 1 for i in _TRIG_JOINTS[1:]]

    M = sympy.zeros(N_JOINTS, N_COLUMNS)
    for j, (name, sign) in enumerate(GC_COLUMNS):
        height = _rational(expand(wanted[name])).xreplace(motor)  # R_k[2, a] in q^d
        for r in range(N_JOINTS):
            column = sign * sympy.diff(height, qd[r])  # d P / d q^d_r, P = g R_k[2, a] (g factored out)
            if column == 0:
                continue
            column = sympy.expand_trig(column.xreplace({qd[2]: u - qd[1]}))
            column = sympy.expand(column.xreplace(to_trig))
            if column.free_symbols - set(gens):
                raise DescriptionError(f"gc column {name}: unexpected dependence {column.free_symbols - set(gens)}")
            _, column = sympy.reduced(column, pythagoras, *gens, order="lex")  # s^2 -> 1 - c^2
            M[r, j] = column
    return M, t


def gravity_columns(description: ArmDescription | None = None) -> sympy.Matrix:
    """R_g(q) / g (7 x 10 sympy Matrix) in the dVRK joint positions q1..q7 (the gc file's model)."""
    import sympy

    M, t = gravity_columns_trig(description)
    q = sympy.symbols("q1:8", real=True)
    back = {t["s2"]: sympy.sin(q[1]), t["c2"]: sympy.cos(q[1]),
            t["s23"]: sympy.sin(q[1] + q[2]), t["c23"]: sympy.cos(q[1] + q[2])}
    for i in _TRIG_JOINTS[1:]:
        back[t[f"s{i}"]] = sympy.sin(q[i - 1])
        back[t[f"c{i}"]] = sympy.cos(q[i - 1])
    return M.xreplace(back)


# -- code generation ----------------------------------------------------------------------------------

def _printer() -> PythonCodePrinter:
    from sympy.printing.pycode import PythonCodePrinter

    class _Printer(PythonCodePrinter):
        def _print_Float(self, expr):  # noqa: N802 - sympy printer protocol; full double precision
            return repr(float(expr))

    return _Printer({"standard": "python3"})


def _trig_prologue(t: dict[str, sympy.Symbol], array: bool) -> list[str]:
    fn = "numpy." if array else "math."
    col = (lambda i: f"q[:, {i}]") if array else (lambda i: f"q[{i}]")
    lines = [f"    q23 = {col(1)} + {col(2)}"]
    for name in t:
        arg = "q23" if name.endswith("23") else col(int(name[1:]) - 1)
        lines.append(f"    {name} = {fn}{'sin' if name[0] == 's' else 'cos'}({arg})")
    return lines


def generate_source(header: str = "") -> str:
    """Python source of the generated module (NumPy regressor and scalar torques)."""
    import sympy

    M, t = gravity_columns_trig()
    g = sympy.Symbol("g", real=True)
    printer = _printer()

    # (a) vectorised: every non-zero entry g * R_ij, CSE over the entries
    keys = [(r, c) for r in range(N_JOINTS) for c in range(N_COLUMNS) if M[r, c] != 0]
    repl, reduced = sympy.cse([g * M[k] for k in keys], symbols=sympy.numbered_symbols("x"), order="none")
    lines = ["def gravity_regressor(q, g):",
             '    """R_g (N x 7 x 10) for dVRK joint positions q (N x 7): g times the derived columns."""']
    lines += _trig_prologue(t, array=True)
    lines += [f"    {s} = {printer.doprint(e)}" for s, e in repl]
    lines.append(f"    out = numpy.zeros((q.shape[0], {N_JOINTS}, {N_COLUMNS}))")
    for (r, c), e in zip(keys, reduced, strict=True):
        value = printer.doprint(e)
        lines.append(f"    out[:, {r}, {c}] = {value}" if e.free_symbols else
                     f"    out[:, {r}, {c}] = {value} * numpy.ones(q.shape[0])")
    lines.append("    return out")
    vector = "\n".join(lines)

    # (b) scalar: out_i = g sum_j R_ij theta_j, nested (Horner) in the trig symbols, CSE over the rows
    theta = sympy.symbols(f"t0:{N_COLUMNS}", real=True)
    rows = [sympy.horner(sum((M[r, c] * theta[c] for c in range(N_COLUMNS)), sympy.S.Zero), *t.values())
            if any(M[r, c] != 0 for c in range(N_COLUMNS)) else sympy.S.Zero for r in range(N_JOINTS)]
    repl, reduced = sympy.cse(rows, symbols=sympy.numbered_symbols("y"), order="none")
    used = set().union(*(e.free_symbols for _, e in repl), *(e.free_symbols for e in reduced))
    lines = ["def gravity_torques(q, theta, out, g=9.81):",
             '    """g R_g(q) theta[:10] for one sample into out (7 floats): math and floats only."""']
    lines += [ln for ln, name in zip(_trig_prologue(t, array=False), ["q23", *t], strict=True)
              if name == "q23" or sympy.Symbol(name, real=True) in used]
    lines += [f"    t{j} = theta[{j}]" for j in range(N_COLUMNS) if theta[j] in used]
    lines += [f"    {s} = {printer.doprint(e)}" for s, e in repl]
    for r, e in enumerate(reduced):
        lines.append(f"    out[{r}] = g * ({printer.doprint(e)})" if e != 0 else f"    out[{r}] = 0.0")
    scalar = "\n".join(lines)
    return f'"""{header}"""\nimport math\n\nimport numpy\n\n\n{vector}\n\n\n{scalar}\n'


# -- cache ----------------------------------------------------------------------------------------------

def _description_path() -> Path:
    from dvrk_ident_ros.environment import find_share_directory

    share = find_share_directory()
    if share is not None and (share / "config" / f"{ARM}.yaml").is_file():
        return share / "config" / f"{ARM}.yaml"
    from dvrk_ident_ros.model.description import resolve_arm  # raises the descriptive error

    return resolve_arm(ARM)


def cache_key() -> str:
    """Hash of the MTM description, this generator and the core's kinematics (model/symbolic.py)."""
    h = hashlib.sha256(_GENERATOR_VERSION.encode())
    h.update(_description_path().read_bytes())
    h.update(Path(__file__).read_bytes())
    h.update(source_file("dvrk_ident_ros.model.symbolic").read_bytes())
    return h.hexdigest()[:20]


def load_generated(*, use_cache: bool = True, cache_dir: Path | None = None) -> ModuleType:
    """The generated module: imported from the cache, or generated (sympy, about a second) and cached."""
    key = cache_key()
    directory = Path(cache_dir) if cache_dir is not None else cache_directory()
    path = directory / f"{ARM}_gc_gravity_{key}.py"
    if use_cache and path.is_file():
        try:
            return import_file(path, f"dvrk_ident_gc_gravity_{key}")
        except Exception:  # noqa: BLE001 - a corrupt cache entry is rebuilt, never trusted
            pass
    source = generate_source(f"Generated by dvrk_ident.gc.symbolic_gravity (key {key}) from the core's MTM "
                             f"kinematics. Do not edit.\n\nColumns: {GC_COLUMNS}.")
    path = writable_directory(directory) / path.name
    write_text_atomically(path, source)
    return import_file(path, f"dvrk_ident_gc_gravity_{key}")
