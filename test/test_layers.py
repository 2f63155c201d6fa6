"""The package's layers, and no import cycle between its modules.

Every import of every module counts, at module level or inside a function (an
import inside a function hides a dependency from a reader, not from this test).
A module may import its own layer and the layers below it, never one above; the
modules' import graph has no cycle at all, nor has the graph of the package's
subpackages. The order is defined once, in :data:`LAYERS`; a new module outside
every listed prefix fails the test until it is placed there. Only the ROS layers
(``ros``, ``nodes``) import rclpy or the generated interfaces;
test_core_without_ros.py imports the rest with rclpy blocked. The command line
(``app``) and the nodes never import each other (:data:`APART`).
"""
from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from pathlib import Path

import pytest
from conftest import REPO_ROOT

PACKAGE = "dvrk_ident_ros"

#: Bottom to top. Each layer: the module prefixes (below ``dvrk_ident_ros.``) in it; the longest
#: matching prefix decides. "" is the package's own __init__ (its version).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("base", ("", "errors", "environment", "files", "cache", "arm", "estimators", "request_paths")),
    ("model", ("model",)),  # arm descriptions, the symbolic model, base parameters, joint limits
    ("data", ("data", "safety")),  # recordings; the checks every command passes
    ("excitation", ("excitation",)),
    ("identify", ("identify", "identify_request")),
    ("gc model", ("gc", "gc.model")),  # the gc file's model: regressor, gc JSON, console files, cable state
    ("gc fitting", ("gc.fitting",)),  # estimating a gc file from recorded poses (MLSE), the held-out folds
    ("gc validation", ("gc.validation",)),  # held-out figures of gc estimates, the format's bound
    ("gc runtime", ("gc.runtime",)),  # the compensation while the arm runs: law, supervisor, take-over
    ("sim", ("sim",)),  # the simulated arm
    ("export", ("export",)),  # URDF / MJCF of identified arms; its checks against sim/
    ("node support", ("parameters", "node_help")),  # the nodes' parameter schemas and --help (ROS-free)
    ("jobs", ("jobs",)),  # offline jobs, launch plans, the process runner, the calibration jobs (ROS-free)
    ("ros", ("ros",)),  # rclpy: what the nodes and the clients share, and the clients the CLI drives arms with
    ("nodes", ("nodes",)),  # rclpy: the nodes
    ("app", ("app",)),  # dvrk-ident (the command line) and its demo; never imports a node
)
#: Only modules of these layers may import ROS_MODULES: rclpy and the package's generated interfaces (what
#: test_core_without_ros.py blocks). Elsewhere, optional ROS extras are imported where used, under a guard
#: (data/interfaces.py: crtk_msgs' definition; jobs/launch_support.py: the launch package, for launch files).
ROS_LAYERS = ("ros", "nodes")
#: Packages that must not import each other in either direction: the command line drives arms through the
#: clients (``ros``) and runs nodes as processes, never by importing them.
APART = (("app", "nodes"),)
ROS_MODULES = ("rclpy", "rosidl_runtime_py", "dvrk_ident")
#: Rooms of one layer's package that never import each other in either direction (module prefixes below the
#: package): the compensation at run time and the offline fitting and validation of gc files.
APART_ROOMS = (("gc.runtime", "gc.fitting"), ("gc.runtime", "gc.validation"))


def package_modules(root: Path) -> dict[str, Path]:
    """Every module of the package under ``root`` by dotted name (a package by its own name)."""
    modules = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _resolve(name: str, modules: Iterable[str]) -> str:
    """The module ``name`` designates: itself, else its longest prefix that is a module."""
    known = set(modules)
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name


def imported_names(module: str, source: str, is_package: bool) -> set[str]:
    """Every absolute name ``source`` imports (module level, functions, classes), relative imports resolved;
    ``from x import y`` gives x.y (a submodule or an attribute: the caller resolves it)."""
    names: set[str] = set()
    base = module.split(".") if is_package else module.split(".")[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            prefix = base[:len(base) - node.level + 1] if node.level else []
            parent = ".".join(prefix + ([node.module] if node.module else []))
            names.add(parent)
            names.update(f"{parent}.{alias.name}" for alias in node.names if alias.name != "*")
    return names


def import_graph(root: Path) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """The package's import graph (module -> package modules it imports) and each module's outside imports
    (their top-level names)."""
    modules = package_modules(root)
    graph: dict[str, set[str]] = {}
    outside: dict[str, set[str]] = {}
    for module, path in modules.items():
        names = imported_names(module, path.read_text(), path.name == "__init__.py")
        inside = {_resolve(n, modules) for n in names if n == PACKAGE or n.startswith(PACKAGE + ".")}
        graph[module] = inside - {module, ""}
        outside[module] = {n.split(".")[0] for n in names if n.split(".")[0] != PACKAGE}
    return graph, outside


def layer_of(module: str, layers=LAYERS) -> int:
    """The index of ``module``'s layer in ``layers`` (longest matching prefix); KeyError when in none."""
    rest = module[len(PACKAGE) + 1:] if module.startswith(PACKAGE + ".") else ""
    best, best_len = None, -1
    for index, (_, prefixes) in enumerate(layers):
        for prefix in prefixes:
            if (rest == prefix or (prefix and rest.startswith(prefix + "."))) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    if best is None:
        raise KeyError(module)
    return best


def layer_violations(graph: dict[str, set[str]], rank: Callable[[str], int]) -> list[str]:
    """Every import of a module from a layer above its own."""
    return sorted(f"{a} -> {b}" for a, deps in graph.items() for b in deps if rank(b) > rank(a))


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (a -> b -> ... -> a), or None when the graph is acyclic."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start)):
            return cycle
    return None


@pytest.fixture(scope="module")
def package_graph():
    return import_graph(REPO_ROOT)


def test_every_module_has_a_layer(package_graph):
    graph, _ = package_graph
    unplaced = []
    for module in graph:
        try:
            layer_of(module)
        except KeyError:
            unplaced.append(module)
    assert not unplaced, f"modules in no layer (place them in test_layers.LAYERS): {unplaced}"


def test_no_module_imports_a_layer_above_its_own(package_graph):
    graph, _ = package_graph
    violations = layer_violations(graph, layer_of)
    names = [name for name, _ in LAYERS]
    assert not violations, "imports from a higher layer (" + " < ".join(names) + "):\n" + "\n".join(violations)


def test_no_import_cycle(package_graph):
    graph, _ = package_graph
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def package_level(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph of the package's subpackages (a top-level module stands for itself)."""
    def top(module: str) -> str:
        return module[len(PACKAGE) + 1:].split(".")[0] if module != PACKAGE else ""
    out: dict[str, set[str]] = {}
    for a, deps in graph.items():
        out.setdefault(top(a), set()).update(top(b) for b in deps if top(b) != top(a))
    return out


def test_no_package_level_import_cycle(package_graph):
    graph, _ = package_graph
    cycle = find_cycle(package_level(graph))
    assert cycle is None, "import cycle between subpackages: " + " -> ".join(cycle)


def test_the_command_line_and_the_nodes_do_not_import_each_other(package_graph):
    graph, _ = package_graph
    level = package_level(graph)
    crossings = [f"{a} -> {b}" for x, y in APART for a, b in ((x, y), (y, x)) if b in level.get(a, set())]
    assert not crossings, crossings


def room_crossings(graph: dict[str, set[str]], apart=APART_ROOMS) -> list[str]:
    """Every import between two rooms that must stay apart."""
    def inside(module: str, room: str) -> bool:
        return module == f"{PACKAGE}.{room}" or module.startswith(f"{PACKAGE}.{room}.")

    return sorted(f"{a} -> {b}" for x, y in apart for p, q in ((x, y), (y, x))
                  for a, deps in graph.items() if inside(a, p) for b in deps if inside(b, q))


def test_the_compensation_at_run_time_and_the_offline_fitting_do_not_import_each_other(package_graph):
    graph, _ = package_graph
    assert room_crossings(graph) == []
    planted = {**graph, f"{PACKAGE}.gc.runtime.law": {f"{PACKAGE}.gc.fitting.mlse"}}
    assert room_crossings(planted) == [f"{PACKAGE}.gc.runtime.law -> {PACKAGE}.gc.fitting.mlse"]


def test_only_the_ros_layer_imports_ros(package_graph):
    """The ROS-free core (and the CLI) never import rclpy or the generated interfaces, even in a function."""
    graph, outside = package_graph
    ros_ranks = {index for index, (name, _) in enumerate(LAYERS) if name in ROS_LAYERS}
    offenders = sorted(f"{m}: {', '.join(sorted(outside[m] & set(ROS_MODULES)))}" for m in graph
                       if layer_of(m) not in ros_ranks and outside[m] & set(ROS_MODULES))
    assert not offenders, offenders


def test_the_graph_sees_function_level_and_relative_imports():
    source = ("import os\nfrom . import sibling\nfrom .. import errors\n"
              "def f():\n    from dvrk_ident_ros.gc import law\n    import rclpy\n")
    names = imported_names("dvrk_ident_ros.gc.data", source, is_package=False)
    assert {"dvrk_ident_ros.gc.sibling", "dvrk_ident_ros.errors", "dvrk_ident_ros.gc.law", "rclpy", "os"} <= names


def test_checks_catch_a_planted_violation_and_cycle():
    """On a small synthetic graph: a core module importing the app layer, and a two-module cycle."""
    layers = (("base", ("errors",)), ("core", ("gc",)), ("app", ("app",)))
    graph = {
        "dvrk_ident_ros.errors": set(),
        "dvrk_ident_ros.gc.data": {"dvrk_ident_ros.errors", "dvrk_ident_ros.app.jobs"},  # planted: core -> app
        "dvrk_ident_ros.gc.bags": {"dvrk_ident_ros.gc.data"},
        "dvrk_ident_ros.app.jobs": {"dvrk_ident_ros.gc.bags"},
    }

    def rank(m: str) -> int:
        return layer_of(m, layers)

    assert layer_violations(graph, rank) == ["dvrk_ident_ros.gc.data -> dvrk_ident_ros.app.jobs"]
    assert find_cycle(graph) == ["dvrk_ident_ros.app.jobs", "dvrk_ident_ros.gc.bags", "dvrk_ident_ros.gc.data",
                                 "dvrk_ident_ros.app.jobs"]
    graph["dvrk_ident_ros.gc.data"] = {"dvrk_ident_ros.errors"}  # the fix: both checks pass
    assert layer_violations(graph, rank) == [] and find_cycle(graph) is None
    graph["dvrk_ident_ros.gc.data"] = {"dvrk_ident_ros.gc.bags"}  # same layer, but a cycle
    assert layer_violations(graph, rank) == [] and find_cycle(graph) is not None
    with pytest.raises(KeyError):
        layer_of("dvrk_ident_ros.unplaced", layers)
    assert rank("dvrk_ident_ros.app.jobs") == 2


def test_the_package_level_checks_catch_a_planted_crossing():
    """Two modules of different subpackages importing each other's package: a package-level cycle that the
    module graph alone does not show, and a crossing of APART."""
    graph = {"dvrk_ident_ros.app.demo": {"dvrk_ident_ros.nodes.clients"},
             "dvrk_ident_ros.nodes.clients": set(), "dvrk_ident_ros.nodes.gc": {"dvrk_ident_ros.app.jobs"},
             "dvrk_ident_ros.app.jobs": set()}
    assert find_cycle(graph) is None
    level = package_level(graph)
    assert level == {"app": {"nodes"}, "nodes": {"app"}}
    assert find_cycle(level) in (["app", "nodes", "app"], ["nodes", "app", "nodes"])
