"""Symbolic dynamic model of a described arm (sympy), as straight-line programs.

The motor torques are linear in the standard parameters (Wang 2019 eq. 15),
tau^m = H(q^m, qd^m, qdd^m) delta. For the link-inertia part we use Lagrange's
equation (eq. 10) in its virtual-power form: with every frame's joint
coordinate linear in q^m, the tree's Lagrangian L(q^m, qd^m) gives

    d/dt dL/dqd^m_j - dL/dq^m_j = sum_k  (dv_k/dqd^m_j) . f_k + (dw_k/dqd^m_j) . n_k

where v_k, w_k are frame k's origin and angular velocities (in frame k) and
f_k = m a_k + dw_k x l + w_k x (w_k x l),  n_k = L dw_k + w_k x (L w_k) + l x a_k
are linear in the barycentric parameters (eqs. 6-7; gravity enters as a base
acceleration -g). Closed chains need no extra treatment: the coordinate
Jacobians are constant, so the projection onto the motor coordinates is exact
(eq. 14). Friction, motor inertia and springs are projected with the same
Jacobians (eqs. 11-14, 17-20).

Expressions are built in SSA form (every intermediate quantity is a symbol
with one definition), so nothing ever grows into a huge tree and no
`simplify` is needed; sympy's automatic evaluation removes the zeros and the
constant trigonometry (cos(q + pi/2) = -sin(q)), and `cse` removes repeated
sub-expressions among the outputs. The numerical code is printed by
:mod:`dvrk_ident_ros.model.codegen`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import sympy

from dvrk_ident_ros.model.description import ArmDescription, LinearCoordinate
from dvrk_ident_ros.model.parameters import parameter_layout

Vec = list  # a list of three sympy expressions


@dataclass
class Program:
    """A straight-line program: assignments, then named outputs (index tuple -> expression)."""

    name: str
    inputs: tuple[str, ...]  # "q", "qd", "qdd"
    output_shape: tuple[int, ...]  # per sample
    assignments: list[tuple[sympy.Symbol, sympy.Expr]] = field(default_factory=list)
    outputs: dict[tuple[int, ...], sympy.Expr] = field(default_factory=dict)
    _counter: int = 0

    def let(self, expr: sympy.Expr) -> sympy.Expr:
        expr = sympy.sympify(expr)
        if expr.is_Atom or (expr.is_Mul and len(expr.args) == 2 and expr.args[0] == -1 and expr.args[1].is_Atom):
            return expr
        sym = sympy.Symbol(f"{self.name[0]}{self._counter}", real=True)
        self._counter += 1
        self.assignments.append((sym, expr))
        return sym


def _cross(p: Program, a: Vec, b: Vec) -> Vec:
    return [p.let(a[1] * b[2] - a[2] * b[1]), p.let(a[2] * b[0] - a[0] * b[2]), p.let(a[0] * b[1] - a[1] * b[0])]


def _add(p: Program, *vs: Vec) -> Vec:
    return [p.let(sum(v[i] for v in vs)) for i in range(3)]


def _rot_t(p: Program, R: list[list[sympy.Expr]], v: Vec) -> Vec:
    """R^T v."""
    return [p.let(R[0][i] * v[0] + R[1][i] * v[1] + R[2][i] * v[2]) for i in range(3)]


def _is_zero(v: Vec) -> bool:
    return all(x == 0 for x in v)


class _Symbols:
    def __init__(self, description: ArmDescription):
        self.q = description.motor_symbols
        n = len(self.q)
        self.qd = tuple(sympy.Symbol(f"d{m.name}", real=True) for m in self.q)
        self.qdd = tuple(sympy.Symbol(f"dd{m.name}", real=True) for m in self.q)
        self.n = n

    def rate(self, c: LinearCoordinate, order: int) -> sympy.Expr:
        syms = self.qd if order == 1 else self.qdd
        return sum((sympy.Float(k) * s for k, s in zip(c.coefficients, syms, strict=True) if k != 0), sympy.S.Zero)


def _local_transform(p: Program, frame) -> tuple[list[list[sympy.Expr]], Vec]:
    """Modified DH: T = RotX(alpha) TransX(a) RotZ(theta) TransZ(d)."""
    ca, sa = sympy.cos(frame.alpha), sympy.sin(frame.alpha)
    ct, st = p.let(sympy.cos(frame.theta)), p.let(sympy.sin(frame.theta))
    d = p.let(frame.d)
    R = [[ct, -st, sympy.S.Zero], [p.let(ca * st), p.let(ca * ct), -sa], [p.let(sa * st), p.let(sa * ct), ca]]
    pos = [sympy.Float(frame.a), p.let(-sa * d), p.let(ca * d)]
    return R, pos


def _link_rows(p: Program, w: Vec, dw: Vec, a: Vec) -> tuple[list[list[sympy.Expr]], list[list[sympy.Expr]]]:
    """d f / d delta_L and d n / d delta_L (3 x 10 each) for delta_L = [L(6) l(3) m]."""
    wx, wy, wz = w
    dx, dy, dz = dw
    zero = sympy.S.Zero
    # L w as a linear map of [Lxx Lxy Lxz Lyy Lyz Lzz]
    def k(v):
        return [[v[0], v[1], v[2], zero, zero, zero],
                [zero, v[0], zero, v[1], v[2], zero],
                [zero, zero, v[0], zero, v[1], v[2]]]
    kw, kdw = k(w), k(dw)
    # n_L = K(dw) Lv + w x (K(w) Lv)
    n_L = [[p.let(kdw[r][c] + (w[(r + 1) % 3] * kw[(r + 2) % 3][c] - w[(r + 2) % 3] * kw[(r + 1) % 3][c]))
            for c in range(6)] for r in range(3)]
    # f_l = (S(dw) + S(w)^2) l ; n_l = -S(a) l  (l x a = -a x l)
    s_dw = [[zero, -dz, dy], [dz, zero, -dx], [-dy, dx, zero]]
    ww = [[-(wy * wy + wz * wz), wx * wy, wx * wz], [wx * wy, -(wx * wx + wz * wz), wy * wz],
          [wx * wz, wy * wz, -(wx * wx + wy * wy)]]
    f_l = [[p.let(s_dw[r][c] + ww[r][c]) for c in range(3)] for r in range(3)]
    ax, ay, az = a
    n_l = [[zero, az, -ay], [-az, zero, ax], [ay, -ax, zero]]
    df = [[zero] * 6 + f_l[r] + [a[r]] for r in range(3)]
    dn = [n_L[r] + n_l[r] + [zero] for r in range(3)]
    return df, dn


def build_program(description: ArmDescription, name: str, *, velocity: bool, acceleration: bool,
                  gravity: bool, transmission: bool) -> Program:
    """Regressor program: tau^m (n) x delta (P) for the chosen terms.

    velocity/acceleration/gravity select the rigid-body terms (Coriolis and
    centrifugal, inertial, gravitational); transmission adds friction, motor
    inertia (with acceleration) and springs (always position-only).
    """
    layout = parameter_layout(description)
    syms = _Symbols(description)
    inputs = ("q",) + (("qd",) if velocity or transmission else ()) + (("qdd",) if acceleration else ())
    p = Program(name, inputs, (syms.n, len(layout)))
    n = syms.n
    zero3 = [sympy.S.Zero] * 3
    state: dict[str, tuple[Vec, Vec, Vec, Vec, list[Vec], list[Vec]]] = {}
    g = [sympy.Float(-x) for x in description.gravity] if gravity else zero3
    state["base"] = (zero3, zero3, zero3, list(g), [zero3] * n, [zero3] * n)
    columns: dict[tuple[int, int], sympy.Expr] = {}

    for frame in description.frames:
        w_p, v_p, dw_p, a_p, jw_p, jv_p = state[frame.parent]
        R, pos = _local_transform(p, frame)
        rev = frame.joint_type == "revolute"
        pri = frame.joint_type == "prismatic"
        rate = syms.rate(frame.joint, 1) if frame.joint is not None and velocity else sympy.S.Zero
        accel = syms.rate(frame.joint, 2) if frame.joint is not None and acceleration else sympy.S.Zero
        # velocities and accelerations in this frame
        w_r = _rot_t(p, R, w_p)
        w = [w_r[0], w_r[1], p.let(w_r[2] + (rate if rev else 0))]
        v = _rot_t(p, R, _add(p, v_p, _cross(p, w_p, pos)))
        if pri:
            v = [v[0], v[1], p.let(v[2] + rate)]
        dw_r = _rot_t(p, R, dw_p)
        if rev:
            wz = _cross(p, w_r, [0, 0, rate])
            dw = [p.let(dw_r[0] + wz[0]), p.let(dw_r[1] + wz[1]), p.let(dw_r[2] + wz[2] + accel)]
        else:
            dw = dw_r
        a = _rot_t(p, R, _add(p, a_p, _cross(p, dw_p, pos), _cross(p, w_p, _cross(p, w_p, pos))))
        if pri:
            cor = _cross(p, w_r, [0, 0, 2 * rate])
            a = [p.let(a[0] + cor[0]), p.let(a[1] + cor[1]), p.let(a[2] + cor[2] + accel)]
        # partial velocities (columns j: d w / d qd^m_j, d v / d qd^m_j), position-only
        jw, jv = [], []
        for j in range(n):
            cj = frame.joint.coefficients[j] if frame.joint is not None else 0.0
            jwj = _rot_t(p, R, jw_p[j])
            if rev and cj != 0:
                jwj = [jwj[0], jwj[1], p.let(jwj[2] + sympy.Float(cj))]
            jvj = _rot_t(p, R, _add(p, jv_p[j], _cross(p, jw_p[j], pos)))
            if pri and cj != 0:
                jvj = [jvj[0], jvj[1], p.let(jvj[2] + sympy.Float(cj))]
            jw.append(jwj)
            jv.append(jvj)
        state[frame.name] = (w, v, dw, a, jw, jv)
        if frame.inertia:
            df, dn = _link_rows(p, w, dw, a)
            start = layout.inertial_blocks[frame.name]
            for j in range(n):
                if _is_zero(jw[j]) and _is_zero(jv[j]):
                    continue
                for c in range(10):
                    expr = sum((jv[j][r] * df[r][c] + jw[j][r] * dn[r][c] for r in range(3)), sympy.S.Zero)
                    if expr != 0:
                        columns[(j, start + c)] = expr
    if transmission:
        _transmission_columns(description, layout, syms, columns, acceleration)
    for key, expr in columns.items():
        p.outputs[key] = expr
    return p


def _transmission_columns(description, layout, syms, columns, acceleration: bool) -> None:
    """Friction (eq. 11), motor inertia (eq. 12) and springs (eq. 13), projected by dc/dq^m (eq. 14)."""
    elements = []
    for frame in description.frames:
        elements.append((frame.name, frame.joint, frame.friction, frame.motor_inertia, frame.spring_deflection))
    for drive in description.drives:
        elements.append((drive.name, drive.coordinate, drive.friction, drive.motor_inertia, None))
    for owner, coord, friction, motor_inertia, spring in elements:
        if coord is None:
            continue
        rate = syms.rate(coord, 1)
        terms = {}
        if friction:
            terms[f"Fv{owner}"] = rate
            terms[f"Fc{owner}"] = sympy.sign(rate)
            terms[f"Fo{owner}"] = sympy.S.One
        if motor_inertia and acceleration:
            terms[f"Im{owner}"] = syms.rate(coord, 2)
        if spring is not None:
            terms[f"K{owner}"] = spring
        for pname, term in terms.items():
            col = layout.index(pname)
            for j, cj in enumerate(coord.coefficients):
                if cj != 0:
                    columns[(j, col)] = columns.get((j, col), sympy.S.Zero) + sympy.Float(cj) * term


def gravity_program(description: ArmDescription) -> Program:
    """Position-only part: rigid-body gravity and springs (g(q) of the model)."""
    p = build_program(description, "gravity", velocity=False, acceleration=False, gravity=True, transmission=False)
    layout = parameter_layout(description)
    for frame in description.frames:
        if frame.spring_deflection is not None:
            col = layout.index(f"K{frame.name}")
            for j, cj in enumerate(frame.joint_coordinate.coefficients):
                if cj != 0:
                    p.outputs[(j, col)] = sympy.Float(cj) * frame.spring_deflection
    return p


def kinematics_program(description: ArmDescription) -> Program:
    """Forward kinematics: base-frame rotation and origin of every frame (N x frames x 4 x 4)."""
    nf = len(description.frames)
    p = Program("fk", ("q",), (nf, 4, 4))
    pose: dict[str, tuple[list[list[sympy.Expr]], Vec]] = {
        "base": ([[sympy.S.One if r == c else sympy.S.Zero for c in range(3)] for r in range(3)], [sympy.S.Zero] * 3)
    }
    for i, frame in enumerate(description.frames):
        R_p, o_p = pose[frame.parent]
        R, pos = _local_transform(p, frame)
        R_k = [[p.let(sum(R_p[r][k] * R[k][c] for k in range(3))) for c in range(3)] for r in range(3)]
        o_k = [p.let(o_p[r] + sum(R_p[r][k] * pos[k] for k in range(3))) for r in range(3)]
        pose[frame.name] = (R_k, o_k)
        for r in range(3):
            for c in range(3):
                p.outputs[(i, r, c)] = R_k[r][c]
            p.outputs[(i, r, 3)] = o_k[r]
        p.outputs[(i, 3, 3)] = sympy.S.One
    return p


def known_torque_program(description: ArmDescription) -> Program:
    """Modelled, not identified torques (e.g. the MTM joint-4 cable), projected on the motors."""
    syms = _Symbols(description)
    p = Program("known", ("q",), (syms.n,))
    totals: dict[tuple[int, ...], sympy.Expr] = {}
    for known in description.known_torques:
        c = known.coordinate.expression
        value = sum((sympy.Float(k) * c ** (len(known.polynomial) - 1 - i) for i, k in enumerate(known.polynomial)),
                    sympy.S.Zero)
        value = p.let(value)
        for j, cj in enumerate(known.coordinate.coefficients):
            if cj != 0:
                totals[(j,)] = totals.get((j,), sympy.S.Zero) + sympy.Float(cj) * value
    p.outputs.update(totals)
    return p


def all_programs(description: ArmDescription) -> list[Program]:
    """Every function the numerical model module provides."""
    return [
        build_program(description, "regressor", velocity=True, acceleration=True, gravity=True, transmission=True),
        build_program(description, "inertia", velocity=False, acceleration=True, gravity=False, transmission=False),
        build_program(description, "coriolis", velocity=True, acceleration=False, gravity=False, transmission=False),
        gravity_program(description),
        kinematics_program(description),
        known_torque_program(description),
    ]
