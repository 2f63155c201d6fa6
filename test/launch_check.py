"""Static checks of ROS 2 launch files and node parameter files, for machines without ros2launch.

A launch file must compile; every ``executable=`` it names must be a console
script of this package; every ``config/...`` file it references must exist
(:func:`check_launch_file`). Every ``LaunchConfiguration`` it reads must be a
declared launch argument (or set by ``SetLaunchConfiguration``, or carry a
``default=``), and every declared argument must be read
(:func:`check_launch_arguments`). Every parameter a ``Node`` sets in a dict must
be a parameter of the node's own file ``config/<executable>.yaml``
(:func:`check_node_parameters`).

Exit statuses and argument conventions (:func:`check_exit_handlers`,
:func:`check_argument_conventions`): every ``Node`` is bound to a name and
given to ``exit_handler`` of ``dvrk_ident_ros.jobs.launch_support`` (a node that
exits non-zero fails the launch), one of them ``required=True`` (its exit ends
the launch); a boolean argument has no ``choices`` (they would refuse ``True``
and ``1``) and is made canonical by ``canonical_arguments(booleans=...)``, as
is the ``arm`` argument (any case), which has no ``choices`` either.

A node parameter file must have the ``/**: ros__parameters:`` form, so that it
applies whatever the node is named, and only values that a ROS parameter can
hold: no empty value, no empty list (it has no type), no mixed-type list
(:func:`check_parameter_file`).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import yaml

_CONFIG_REF = re.compile(r"^(?:config/)?[\w./-]+\.(?:yaml|yml|json)$")
#: Parameters every ROS node has, which a node's own file need not list.
_BUILTIN_PARAMETERS = {"use_sim_time"}


def check_launch_file(path: Path, executables: set[str], config_dir: Path) -> list[str]:
    """Return the problems found in one launch file (empty when it is fine)."""
    source = path.read_text()
    try:
        tree = ast.parse(source, filename=str(path))
        compile(tree, str(path), "exec")
    except SyntaxError as exc:
        return [f"{path.name}:{exc.lineno}: does not compile: {exc.msg}"]
    problems = []
    if not any(isinstance(n, ast.FunctionDef) and n.name == "generate_launch_description" for n in tree.body):
        problems.append(f"{path.name}: no generate_launch_description()")
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "executable":
            if not (isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)):
                problems.append(f"{path.name}:{node.value.lineno}: executable is not a literal string")
            elif node.value.value not in executables:
                problems.append(f"{path.name}:{node.value.lineno}: unknown executable {node.value.value!r}")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _CONFIG_REF.match(node.value):
            name = node.value.removeprefix("config/")
            if not (config_dir / name).is_file():
                problems.append(f"{path.name}:{node.lineno}: config file {node.value!r} does not exist")
    return problems


def _parse(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_text(), filename=str(path))
    except SyntaxError:
        return None  # check_launch_file reports it


def _calls(tree: ast.AST, *names: str):
    """Calls of a function or class named one of ``names`` (``X(...)`` or ``module.X(...)``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if called in names:
                yield called, node


def _argument(call: ast.Call, keyword: str) -> ast.expr | None:
    """The first positional argument of ``call``, or its keyword argument ``keyword``."""
    if call.args:
        return call.args[0]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def _literal(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def check_launch_arguments(path: Path) -> list[str]:
    """Launch arguments: every configuration read is declared (or set), every declared argument is read."""
    tree = _parse(path)
    if tree is None:
        return []
    problems = []
    declared: dict[str, int] = {}
    set_names: set[str] = set()
    read: dict[str, int] = {}
    for kind, call in _calls(tree, "DeclareLaunchArgument", "SetLaunchConfiguration", "LaunchConfiguration",
                             "LaunchConfigurationEquals", "LaunchConfigurationNotEquals"):
        name = _literal(_argument(call, "variable_name" if kind == "LaunchConfiguration" else
                                  "launch_configuration_name" if kind.startswith("LaunchConfiguration") else "name"))
        if name is None:
            problems.append(f"{path.name}:{call.lineno}: the name given to {kind} is not a literal string")
        elif kind == "DeclareLaunchArgument":
            if name in declared:
                problems.append(f"{path.name}:{call.lineno}: launch argument {name!r} declared twice "
                                f"(first on line {declared[name]})")
            declared.setdefault(name, call.lineno)
        elif kind == "SetLaunchConfiguration":
            set_names.add(name)
        else:
            read.setdefault(name, call.lineno)
            if kind == "LaunchConfiguration" and any(k.arg == "default" for k in call.keywords):
                set_names.add(name)
    for name, line in sorted(read.items(), key=lambda item: item[1]):
        if name not in declared and name not in set_names:
            problems.append(f"{path.name}:{line}: LaunchConfiguration {name!r} is not a declared launch argument")
    for name, line in sorted(declared.items(), key=lambda item: item[1]):
        if name not in read:
            problems.append(f"{path.name}:{line}: launch argument {name!r} is declared but never used")
    return problems


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _imports_support(tree: ast.Module, name: str) -> bool:
    return any(isinstance(n, ast.ImportFrom) and n.module == "dvrk_ident_ros.jobs.launch_support"
               and any(a.name == name for a in n.names) for n in ast.walk(tree))


def check_exit_handlers(path: Path) -> list[str]:
    """Every Node is bound to a name given to ``exit_handler(...)``; at least one handler is required=True.

    Returns the problems; :func:`required_executables` tells which nodes end the launch.
    """
    tree = _parse(path)
    if tree is None:
        return []
    problems = []
    if not _imports_support(tree, "exit_handler"):
        problems.append(f"{path.name}: does not import exit_handler from dvrk_ident_ros.jobs.launch_support")
    bound: dict[str, int] = {}  # variable -> line of its Node(...)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                getattr(node.value.func, "id", getattr(node.value.func, "attr", None)) == "Node":
            bound.update({t.id: node.lineno for t in node.targets if isinstance(t, ast.Name)})
    node_calls = [call for _, call in _calls(tree, "Node")]
    bound_calls = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)}
    for call in node_calls:
        if id(call) not in bound_calls:
            problems.append(f"{path.name}:{call.lineno}: a Node not bound to a name cannot be given to exit_handler")
    handled: dict[str, bool] = {}
    for _, call in _calls(tree, "exit_handler"):
        target = call.args[0] if call.args else _keyword(call, "node")
        if not isinstance(target, ast.Name):
            problems.append(f"{path.name}:{call.lineno}: exit_handler's node is not a name")
            continue
        required = _keyword(call, "required")
        if required is None and len(call.args) > 2:
            required = call.args[2]
        handled[target.id] = isinstance(required, ast.Constant) and required.value is True
    for name, line in sorted(bound.items(), key=lambda item: item[1]):
        if name not in handled:
            problems.append(f"{path.name}:{line}: node {name!r} has no exit_handler: its failure would not fail "
                            "the launch")
    if node_calls and not any(handled.values()):
        problems.append(f"{path.name}: no exit_handler(..., required=True): nothing ends the launch with the status "
                        "of the node that does its job")
    return problems


def required_executables(path: Path) -> set[str]:
    """The executables of the nodes whose exit_handler is required=True."""
    tree = ast.parse(path.read_text())
    executables = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and \
                getattr(node.value.func, "id", None) == "Node":
            executable = _literal(_keyword(node.value, "executable"))
            executables.update({t.id: executable for t in node.targets if isinstance(t, ast.Name)})
    required = set()
    for _, call in _calls(tree, "exit_handler"):
        flag = _keyword(call, "required")
        if call.args and isinstance(call.args[0], ast.Name) and isinstance(flag, ast.Constant) and flag.value is True:
            required.add(executables.get(call.args[0].id))
    return required


#: A default that marks an argument as a boolean ("1" and "0" are counts as often: a stride, a number of poses).
_BOOLEAN_TEXT = {"true", "false", "True", "False"}


def check_argument_conventions(path: Path) -> list[str]:
    """Booleans and the arm argument as ROS accepts them (see the module's docstring)."""
    tree = _parse(path)
    if tree is None:
        return []
    problems = []
    canonical = [call for _, call in _calls(tree, "canonical_arguments")]
    booleans_made_canonical: set[str] = set()
    arm_made_canonical: set[str] = set()
    for call in canonical:
        listed = _keyword(call, "booleans")
        if listed is not None:
            try:
                booleans_made_canonical |= set(ast.literal_eval(listed))
            except ValueError:
                problems.append(f"{path.name}:{call.lineno}: canonical_arguments(booleans=...) is not a literal")
        arm = _literal(_keyword(call, "arm"))
        if arm:
            arm_made_canonical.add(arm)
    if canonical and not _imports_support(tree, "canonical_arguments"):
        problems.append(f"{path.name}: canonical_arguments is not imported from dvrk_ident_ros.jobs.launch_support")
    declared_booleans: set[str] = set()
    variables = {t.id: _literal(_argument(n.value, "variable_name")) for n in ast.walk(tree)
                 if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
                 and getattr(n.value.func, "id", None) == "LaunchConfiguration" for t in n.targets
                 if isinstance(t, ast.Name)}
    declarations = sorted((call for _, call in _calls(tree, "DeclareLaunchArgument")), key=lambda c: c.lineno)
    for call in declarations:
        name = _literal(_argument(call, "name"))
        default = _keyword(call, "default_value")
        choices = _keyword(call, "choices")
        choice_values = set()
        if choices is not None:
            try:
                choice_values = {str(c) for c in ast.literal_eval(choices)}
            except ValueError:
                pass
        # a default that is another argument's value (home_arm: the value of sim) has that argument's kind
        is_boolean = (_literal(default) in _BOOLEAN_TEXT) or bool(choice_values & {"true", "false"}) or \
            (isinstance(default, ast.Name) and variables.get(default.id) in declared_booleans)
        if is_boolean:
            declared_booleans.add(name)
            if choices is not None:
                problems.append(f"{path.name}:{call.lineno}: boolean argument {name!r} has choices: it would refuse "
                                "True, 1 ... (ROS accepts true/false/1/0 in any case)")
        if name == "arm":
            if choices is not None:
                problems.append(f"{path.name}:{call.lineno}: argument 'arm' has choices: it would refuse psm1 "
                                "(arm names are case-insensitive)")
            if "arm" not in arm_made_canonical:
                problems.append(f"{path.name}:{call.lineno}: argument 'arm' is not made canonical "
                                "(canonical_arguments(arm=\"arm\"))")
    for name in sorted(declared_booleans - booleans_made_canonical):
        problems.append(f"{path.name}: boolean argument {name!r} is not made canonical "
                        "(canonical_arguments(booleans=...))")
    return problems


def parameter_names(path: Path) -> set[str]:
    """Names of the parameters of a ``/**: ros__parameters:`` file (nested mappings as dotted names)."""
    def names(mapping: dict, prefix: str = "") -> set[str]:
        out = set()
        for key, value in mapping.items():
            out |= names(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}"}
        return out

    data = yaml.safe_load(path.read_text())
    return names(data["/**"]["ros__parameters"])


def check_node_parameters(path: Path, config_dir: Path) -> list[str]:
    """Every parameter set in a ``Node(parameters=[..., {dict}])`` is one of ``config/<executable>.yaml``."""
    tree = _parse(path)
    if tree is None:
        return []
    problems = []
    for _, call in _calls(tree, "Node"):
        executable = _literal(next((k.value for k in call.keywords if k.arg == "executable"), None))
        parameters = next((k.value for k in call.keywords if k.arg == "parameters"), None)
        if executable is None or not isinstance(parameters, ast.List | ast.Tuple):
            continue
        keys = [(key, d.lineno) for d in parameters.elts if isinstance(d, ast.Dict) for key in d.keys]
        if not keys:
            continue
        own_file = config_dir / f"{executable}.yaml"
        if not own_file.is_file():
            problems.append(f"{path.name}:{call.lineno}: {executable} sets parameters but config/{own_file.name} "
                            "does not exist to declare them")
            continue
        try:
            known = parameter_names(own_file) | _BUILTIN_PARAMETERS
        except (yaml.YAMLError, KeyError, TypeError, AttributeError):
            problems.append(f"{path.name}:{call.lineno}: config/{own_file.name} is not a parameter file")
            continue
        for key, line in keys:
            name = _literal(key)
            if name is None:
                problems.append(f"{path.name}:{line}: a parameter name of {executable} is not a literal string")
            elif name not in known:
                problems.append(f"{path.name}:{line}: {name!r} is not a parameter of config/{own_file.name}")
    return problems


def _check_name(key, problems: list[str], where: str) -> None:
    if not isinstance(key, str):  # `on:`, `yes:`, `1:` ... are not strings to a YAML 1.1 reader
        problems.append(f"{where}: parameter name {key!r} is read as a {type(key).__name__}: rename it")


def _check_value(name: str, value, problems: list[str], where: str) -> None:
    scalar = (bool, int, float, str)
    if isinstance(value, dict):
        if not value:
            problems.append(f"{where}: {name} is an empty mapping")
        for key, sub in value.items():
            _check_name(key, problems, where)
            _check_value(f"{name}.{key}", sub, problems, where)
    elif value is None:
        problems.append(f"{where}: {name} has no value (write \"\" for an empty string)")
    elif isinstance(value, list):
        if not value:
            problems.append(f"{where}: {name} is an empty list, which has no type in a ROS parameter file: "
                            "leave the parameter out, with a comment")
        elif type(value[0]) not in scalar or any(type(v) is not type(value[0]) for v in value):
            problems.append(f"{where}: {name} is not a list of values of one type (bool, int, float or str)")
    elif type(value) not in scalar:
        problems.append(f"{where}: {name} is a {type(value).__name__}, not a ROS parameter type")


def check_parameter_file(path: Path) -> list[str]:
    """Return the problems of one node parameter file (empty when it is fine)."""
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        return [f"{path.name}: does not parse: {exc}"]
    if not isinstance(data, dict) or set(data) != {"/**"}:
        return [f"{path.name}: expected exactly one top-level key '/**' (parameters for any node name)"]
    node = data["/**"]
    if not isinstance(node, dict) or set(node) != {"ros__parameters"}:
        return [f"{path.name}: expected '/**' to hold exactly 'ros__parameters'"]
    parameters = node["ros__parameters"]
    if not isinstance(parameters, dict) or not parameters:
        return [f"{path.name}: 'ros__parameters' is not a non-empty mapping"]
    problems: list[str] = []
    for name, value in parameters.items():
        _check_name(name, problems, path.name)
        _check_value(str(name), value, problems, path.name)
    return problems
