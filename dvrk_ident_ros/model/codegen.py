"""Print the symbolic model's programs as a NumPy module vectorised over samples.

Each function takes arrays of shape (N, n) and returns (N, *shape): every
scalar of the program becomes an array of N samples, so one call evaluates a
whole recording. Only the assignments the outputs need are printed (dead-code
elimination) after common-subexpression elimination over the outputs.
"""
from __future__ import annotations

import sympy
from sympy.printing.numpy import NumPyPrinter

from dvrk_ident_ros.model.symbolic import Program

GENERATOR_VERSION = "1"


class _Printer(NumPyPrinter):
    def __init__(self):
        super().__init__({"fully_qualified_modules": True, "allow_unknown_functions": False})

    def _print_Float(self, expr):  # noqa: N802 - sympy printer protocol; full double precision
        return repr(float(expr))


def _reachable(program: Program, roots: set[sympy.Symbol]) -> list[tuple[sympy.Symbol, sympy.Expr]]:
    needed = set(roots)
    kept = []
    for sym, expr in reversed(program.assignments):
        if sym in needed:
            kept.append((sym, expr))
            needed |= expr.free_symbols
    kept.reverse()
    return kept


def reduce_program(program: Program):
    """CSE over the outputs, then the assignments they need (dead code dropped).

    Returns (output keys, CSE replacements, reduced outputs, needed assignments);
    shared by the NumPy and the C printers.
    """
    keys = list(program.outputs)
    exprs = [program.outputs[k] for k in keys]
    replacements, reduced = sympy.cse(exprs, symbols=sympy.numbered_symbols(f"{program.name[0]}s"), order="none")
    roots: set[sympy.Symbol] = set()
    for _, e in replacements:
        roots |= e.free_symbols
    for e in reduced:
        roots |= e.free_symbols
    return keys, replacements, reduced, _reachable(program, roots)


def print_program(program: Program, motor_names: tuple[str, ...]) -> str:
    printer = _Printer()
    keys, replacements, reduced, body = reduce_program(program)
    lines = [f"def {program.name}({', '.join(program.inputs)}):"]
    lines.append(f'    """Generated: {program.name}, per sample shape {program.output_shape}."""')
    for arg in program.inputs:
        lines.append(f"    {arg} = numpy.atleast_2d({arg})")
    lines.append(f"    n_samples = {program.inputs[0]}.shape[0]")
    used_names = {sym.name for _, e in [*body, *replacements] for sym in e.free_symbols}
    used_names |= {sym.name for e in reduced for sym in e.free_symbols}
    prefixes = {"q": "", "qd": "d", "qdd": "dd"}
    for arg in program.inputs:
        for j, m in enumerate(motor_names):
            name = f"{prefixes[arg]}{m}"
            if name in used_names:
                lines.append(f"    {name} = {arg}[:, {j}]")
    for sym, expr in body:
        lines.append(f"    {sym.name} = {printer.doprint(expr)}")
    for sym, expr in replacements:
        lines.append(f"    {sym.name} = {printer.doprint(expr)}")
    dtype = " + ".join(f"{a}.dtype.type(0)" for a in program.inputs)
    lines.append(f"    out = numpy.zeros((n_samples,) + {program.output_shape!r}, dtype=({dtype}).dtype)")
    for key, expr in zip(keys, reduced, strict=True):
        index = ", ".join(str(i) for i in key)
        lines.append(f"    out[:, {index}] = {printer.doprint(expr)}")
    lines.append("    return out")
    return "\n".join(lines) + "\n"


def print_module(programs: list[Program], motor_names: tuple[str, ...], header: str) -> str:
    parts = [f'"""{header}"""', "import numpy", ""]
    for program in programs:
        parts.append(print_program(program, motor_names))
    return "\n\n".join(parts)
