"""The package uses only the rclpy API that ROS 2 Humble has, or falls back where it is absent.

Humble's API is read at run time from ../shared/reference/rclpy-humble-api.md (generated from
Humble's source with ast: per module, its functions and classes, per class its methods, with
their parameters); every test here is skipped when that file is absent. Every .py file of
dvrk_ident_ros/, bench/ and test/helpers/ is parsed with ast (nothing is imported or run) and
checked for:

- imports from rclpy (``import rclpy.x``, ``from rclpy.x import Name``): the module exists in
  Humble and the name is defined there (a def, a class, a submodule, or one of the few
  assignments and re-exports a def/class listing cannot show: HUMBLE_REEXPORTS,
  HUMBLE_ASSIGNED);
- attribute uses of rclpy modules (``rclpy.name``, ``rclpy.module.name``): the same rule;
- keywords of calls of rclpy functions and classes (``rclpy.init(...)``,
  ``SingleThreadedExecutor(...)``): each must be a parameter of Humble's signature;
- method calls. On a receiver whose type the scanner infers (``self`` or ``super()`` in a
  subclass of an rclpy class, what ``rclpy.create_node``, ``create_timer``, ``get_clock``...
  or an rclpy constructor returns, a parameter annotated with an rclpy class) the method must
  exist in Humble (for the classes of HUMBLE_BASES, whose method set is known in full) and
  take every keyword. On any other receiver, in a file that uses rclpy, a method whose name
  is a method of a Humble class must take every keyword in at least one of Humble's methods
  of that name (``.create_timer(..., autostart=False)`` fails: Jazzy+). Receivers known to
  be something else (names imported from other packages, objects built by their classes)
  are not checked.

A use has a fallback, and is not reported, when it sits
- in the body of a ``try:`` with a handler naming ImportError, ModuleNotFoundError,
  AttributeError or TypeError (not in a function defined there, which runs later).
  ``except Exception`` and a bare ``except`` do not count: a fallback names what it expects;
- in a branch of an ``if``, ``while`` or conditional expression, or after an ``and``, whose
  condition is a capability check mentioning the name (the module, function, method or
  keyword): ``hasattr(obj, "name")`` or ``inspect.signature(...)``, directly or through a
  variable assigned such a check, e.g.
  ``if "autostart" in inspect.signature(node.create_timer).parameters:``.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import REPO_ROOT, SHARED

API_FILE = SHARED / "reference" / "rclpy-humble-api.md"
SCANNED_DIRS = ("dvrk_ident_ros", "bench", "test/helpers")
FALLBACK_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "AttributeError", "TypeError"})
CAPABILITY_CHECKS = frozenset({"hasattr", "signature", "getfullargspec"})

# Names Humble re-exports from another module (the listing shows them only where they are defined).
HUMBLE_REEXPORTS: dict[str, str] = {
    # rclpy/__init__.py: `from rclpy.context import Context` (the annotation of init()'s context)
    "rclpy.Context": "rclpy.context.Context",
    # rclpy/__init__.py: `from rclpy.utilities import get_default_context, get_rmw_implementation_identifier,
    # ok, try_shutdown`
    "rclpy.get_default_context": "rclpy.utilities.get_default_context",
    "rclpy.get_rmw_implementation_identifier": "rclpy.utilities.get_rmw_implementation_identifier",
    "rclpy.ok": "rclpy.utilities.ok",
    "rclpy.try_shutdown": "rclpy.utilities.try_shutdown",
    # rclpy/action/__init__.py: `from rclpy.action.client import ActionClient`,
    # `from rclpy.action.server import ActionServer, CancelResponse, GoalResponse`
    "rclpy.action.ActionClient": "rclpy.action.client.ActionClient",
    "rclpy.action.ActionServer": "rclpy.action.server.ActionServer",
    "rclpy.action.CancelResponse": "rclpy.action.server.CancelResponse",
    "rclpy.action.GoalResponse": "rclpy.action.server.GoalResponse",
}
# Names Humble defines by a module-level assignment, which a def/class listing cannot show.
HUMBLE_ASSIGNED: dict[str, frozenset[str]] = {
    # rclpy/clock.py: `ClockType = _rclpy.ClockType` (an enum of the C extension)
    "rclpy.clock": frozenset({"ClockType"}),
    # rclpy/signals.py: `SignalHandlerOptions = _rclpy.SignalHandlerOptions` (an enum of the C extension)
    "rclpy.signals": frozenset({"SignalHandlerOptions"}),
    # rclpy/qos.py: the presets, `qos_profile_sensor_data = QoSProfile(**_rclpy...('qos_profile_sensor_data'))`
    "rclpy.qos": frozenset({"qos_profile_system_default", "qos_profile_sensor_data", "qos_profile_services_default",
                            "qos_profile_parameters", "qos_profile_parameter_events",
                            "qos_profile_action_status_default"}),
}
# The listing has no base classes. These classes' full method sets are known: their own methods and
# those of the bases named here (as in Humble's source); calling a public method they lack is reported.
HUMBLE_BASES: dict[str, tuple[str, ...]] = {
    "rclpy.node.Node": (),
    "rclpy.timer.Timer": (),
    "rclpy.timer.Rate": (),
    "rclpy.publisher.Publisher": (),
    "rclpy.subscription.Subscription": (),
    "rclpy.client.Client": (),
    "rclpy.service.Service": (),
    "rclpy.context.Context": (),
    "rclpy.executors.Executor": (),
    "rclpy.executors.SingleThreadedExecutor": ("rclpy.executors.Executor",),
    "rclpy.executors.MultiThreadedExecutor": ("rclpy.executors.Executor",),
    "rclpy.clock.Clock": (),
    "rclpy.clock.ROSClock": ("rclpy.clock.Clock",),
    "rclpy.time.Time": (),
    "rclpy.duration.Duration": (),
    "rclpy.task.Future": (),
}
# What these Humble functions and methods return (to type the receivers of later calls).
RETURNS: dict[str, str] = {
    "create_node": "rclpy.node.Node",
    "create_timer": "rclpy.timer.Timer",
    "create_rate": "rclpy.timer.Rate",
    "create_publisher": "rclpy.publisher.Publisher",
    "create_subscription": "rclpy.subscription.Subscription",
    "create_client": "rclpy.client.Client",
    "create_service": "rclpy.service.Service",
    "get_clock": "rclpy.clock.ROSClock",
    "now": "rclpy.time.Time",
    "call_async": "rclpy.task.Future",
}
FOREIGN = "<not rclpy>"  # the type of a receiver known to be something else


@dataclass(frozen=True)
class Signature:
    """The keyword arguments a Humble function or method takes."""

    keywords: frozenset[str]
    any_keyword: bool = False

    @classmethod
    def parse(cls, params: str) -> Signature:
        names: set[str] = set()
        any_keyword = False
        for raw in params.split(","):
            param = raw.strip().split("=")[0].strip()
            if param.startswith("**"):
                any_keyword = True
            elif param and not param.startswith("*") and param not in ("self", "cls", "/"):
                names.add(param)
        return cls(frozenset(names), any_keyword)

    def takes(self, keyword: str) -> bool:
        return self.any_keyword or keyword in self.keywords


Methods = dict[str, list[Signature]]


@dataclass
class HumbleApi:
    """Humble's rclpy as the reference lists it: modules, functions, classes and methods."""

    functions: dict[str, dict[str, Signature]] = field(default_factory=dict)
    classes: dict[str, Methods] = field(default_factory=dict)  # "rclpy.node.Node" -> methods
    modules: set[str] = field(default_factory=set)

    @classmethod
    def parse(cls, text: str) -> HumbleApi:
        api = cls()
        module = None
        for line in text.splitlines():
            if heading := re.match(r"## (rclpy/\S+)\s*$", line):
                module = heading.group(1).replace("/", ".").removesuffix(".__init__")
                api.functions.setdefault(module, {})
                parts = module.split(".")
                api.modules.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
            elif module and (function := re.match(r"- `(\w+)\((.*)\)`\s*$", line)):
                api.functions[module][function.group(1)] = Signature.parse(function.group(2))
            elif module and (klass := re.match(r"- class `(\w+)`:(.*)$", line)):
                methods: Methods = {}
                for name, params in re.findall(r"`(\w+)\(([^)]*)\)`", klass.group(2)):
                    methods.setdefault(name, []).append(Signature.parse(params))
                api.classes[f"{module}.{klass.group(1)}"] = methods
        return api

    def canonical(self, dotted: str) -> str:
        """``dotted`` with a re-exported prefix replaced by where Humble defines it."""
        parts = dotted.split(".")
        for i in range(len(parts), 1, -1):
            prefix = ".".join(parts[:i])
            if prefix in HUMBLE_REEXPORTS:
                return ".".join([HUMBLE_REEXPORTS[prefix], *parts[i:]])
        return dotted

    def defines(self, module: str, name: str) -> bool:
        dotted = f"{module}.{name}"
        return (name in self.functions.get(module, {}) or dotted in self.classes or dotted in self.modules
                or dotted in HUMBLE_REEXPORTS or name in HUMBLE_ASSIGNED.get(module, ()))

    def split(self, dotted: str) -> tuple[str, list[str]]:
        """(the longest prefix that is a Humble module, the rest of the names)."""
        parts = dotted.split(".")
        for i in range(len(parts) - 1, 0, -1):
            if ".".join(parts[:i]) in self.modules:
                return ".".join(parts[:i]), parts[i:]
        return "", parts

    def methods_of(self, klass: str) -> Methods:
        methods: Methods = {}
        for base in (klass, *HUMBLE_BASES.get(klass, ())):
            for name, signatures in self.classes.get(base, {}).items():
                methods.setdefault(name, []).extend(signatures)
        return methods

    def methods_named(self, name: str) -> list[tuple[str, Signature]]:
        return [(klass, sig) for klass, methods in self.classes.items() for sig in methods.get(name, ())]


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


Scope = ast.AST  # a Module, function, lambda or class: where a name or a self.attribute lives
Type = str | ast.ClassDef | None
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


class _FileScan:
    """One file's uses of rclpy, checked against Humble's API."""

    def __init__(self, tree: ast.Module, path: str, api: HumbleApi):
        self.tree, self.path, self.api = tree, path, api
        self.parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
        self.rclpy_names: dict[str, str] = {}  # local name -> what it is in rclpy ("rclpy.node.Node")
        self.foreign_names: set[str] = set()  # names imported from elsewhere
        self.capability_vars: dict[str, set[str]] = {}  # NAME = <capability check> -> what it mentions
        self.types: dict[tuple[Scope, str], Type] = {}
        self.violations: list[Violation] = []
        self.uses_rclpy = "nodes" in Path(path).parts
        self.local_classes = {c.name: c for c in ast.walk(tree) if isinstance(c, ast.ClassDef)}
        self.own_names = {c: _defined_in(c) for c in self.local_classes.values()}
        self._bind_imports()
        self._find_capability_vars()
        self._infer_types()

    # --- names, scopes and types -------------------------------------------------------------
    def _bind_imports(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "rclpy":
                        self.uses_rclpy = True
                        local = alias.asname or "rclpy"
                        self.rclpy_names[local] = alias.name if alias.asname else "rclpy"
                    else:
                        self.foreign_names.add(alias.asname or alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom):
                rclpy = node.level == 0 and (node.module or "").split(".")[0] == "rclpy"
                self.uses_rclpy |= rclpy
                for alias in node.names:
                    if rclpy:
                        self.rclpy_names[alias.asname or alias.name] = self.api.canonical(f"{node.module}.{alias.name}")
                    else:
                        self.foreign_names.add(alias.asname or alias.name)
        self.foreign_names -= set(self.rclpy_names)

    def _find_capability_vars(self) -> None:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Assign) and _is_capability_check(node.value):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.capability_vars[target.id] = _mentioned(node.value)

    def _scope(self, node: ast.AST, kinds: tuple[type, ...] = _FUNCTIONS) -> Scope:
        parent = self.parents.get(node)
        while parent is not None and not isinstance(parent, kinds):
            parent = self.parents.get(parent)
        return parent if parent is not None else self.tree

    def _class_of_method(self, node: ast.AST) -> ast.ClassDef | None:
        function = self._scope(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        parent = self.parents.get(function)
        return parent if isinstance(parent, ast.ClassDef) else None

    def _key(self, target: ast.AST) -> tuple[Scope, str] | None:
        if isinstance(target, ast.Name):
            return self._scope(target), target.id
        if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self"
                and (klass := self._class_of_method(target)) is not None):
            return klass, f"self.{target.attr}"
        return None

    def _infer_types(self) -> None:
        """Types of names and self.attributes that every assignment in their scope agrees on."""
        for _ in range(3):  # a type can depend on another one (node = ...; timer = node.create_timer(...))
            seen: dict[tuple[Scope, str], set[Type]] = {}
            for node in ast.walk(self.tree):
                if isinstance(node, ast.arg):
                    key, value = (self._scope(node), node.arg), self._annotation_type(node.annotation)
                elif isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Store):
                    key, parent = self._key(node), self.parents.get(node)
                    if isinstance(parent, ast.Assign) and any(node is t for t in parent.targets):
                        value = self.type_of(parent.value)
                    elif isinstance(parent, ast.AnnAssign) and node is parent.target:
                        value = self._annotation_type(parent.annotation) or self.type_of(parent.value)
                    else:
                        value = None
                else:
                    continue
                if key is not None:
                    seen.setdefault(key, set()).add(value)
            self.types = {key: values.pop() if len(values) == 1 else None for key, values in seen.items()}

    def _annotation_type(self, annotation: ast.AST | None) -> Type:
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                annotation = ast.parse(annotation.value, mode="eval").body
            except SyntaxError:
                return None
        dotted = self.resolve(annotation) if annotation is not None else None
        return dotted if dotted in self.api.classes else None

    def resolve(self, expr: ast.AST) -> str | None:
        """What an expression names in rclpy ("rclpy.node.Node"), or None."""
        if isinstance(expr, ast.Name):
            return self.rclpy_names.get(expr.id)
        if isinstance(expr, ast.Attribute) and (base := self.resolve(expr.value)) is not None:
            return self.api.canonical(f"{base}.{expr.attr}")
        return None

    def humble_base(self, klass: ast.ClassDef) -> str | None:
        bases = [self.resolve(base) for base in klass.bases]
        return next((base for base in bases if base in self.api.classes), None)

    def type_of(self, expr: ast.AST) -> Type:
        """The Humble class (or a class of this file deriving from one) of an expression's value,
        FOREIGN when it is known to be something else, None when unknown."""
        if isinstance(expr, ast.Name):
            if expr.id == "self" and (klass := self._class_of_method(expr)) is not None:
                return klass if self.humble_base(klass) else FOREIGN
            if expr.id in self.foreign_names:
                return FOREIGN
            scope: ast.AST | None = self._scope(expr)
            while scope is not None:
                if (scope, expr.id) in self.types:
                    return self.types[scope, expr.id]
                scope = None if scope is self.tree else self._scope(scope)
            return None
        if isinstance(expr, ast.Attribute):
            key = self._key(expr)
            return self.types.get(key) if key is not None else None
        if not isinstance(expr, ast.Call):
            return None
        func = expr.func
        dotted = self.resolve(func)
        if dotted in self.api.classes:
            return dotted
        if dotted is not None:
            module, rest = self.api.split(dotted)
            return RETURNS.get(rest[0]) if len(rest) == 1 and rest[0] in self.api.functions.get(module, {}) else None
        if isinstance(func, ast.Name):
            if func.id == "super" and (klass := self._class_of_method(expr)) is not None:
                return self.humble_base(klass) or FOREIGN
            if (local := self.local_classes.get(func.id)) is not None:
                return local if self.humble_base(local) else FOREIGN
            if func.id in self.foreign_names and func.id[:1].isupper():
                return FOREIGN  # a constructor of another package's class
            return None
        if isinstance(func, ast.Attribute):
            root = func
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in self.foreign_names and func.attr[:1].isupper():
                return FOREIGN
            receiver = self.type_of(func.value)
            methods = self._methods(receiver)
            if methods is not None and func.attr in methods and func.attr in RETURNS:
                return RETURNS[func.attr]
        return None

    def _methods(self, receiver: Type) -> Methods | None:
        if isinstance(receiver, ast.ClassDef):
            own = self.own_names[receiver]
            base = self.humble_base(receiver)
            return {name: sigs for name, sigs in self.api.methods_of(base).items() if name not in own} if base else None
        if isinstance(receiver, str) and receiver != FOREIGN:
            return self.api.methods_of(receiver)
        return None

    # --- fallbacks ----------------------------------------------------------------------------
    def has_fallback(self, node: ast.AST, names: set[str]) -> bool:
        child, parent, in_nested_function = node, self.parents.get(node), False
        while parent is not None:
            if isinstance(parent, ast.Try) and not in_nested_function and any(child is s for s in parent.body):
                if any(_catches(handler) for handler in parent.handlers):
                    return True
            elif isinstance(parent, (ast.If, ast.While, ast.IfExp)) and child is not parent.test:
                if self._checks(parent.test, names):
                    return True
            elif isinstance(parent, ast.BoolOp) and isinstance(parent.op, ast.And):
                before = parent.values[:next(i for i, v in enumerate(parent.values) if v is child)]
                if any(self._checks(value, names) for value in before):
                    return True
            in_nested_function |= isinstance(parent, _FUNCTIONS)
            child, parent = parent, self.parents.get(parent)
        return False

    def _checks(self, test: ast.AST, names: set[str]) -> bool:
        if _is_capability_check(test) and names & _mentioned(test):
            return True
        return any(isinstance(sub, ast.Name) and names & self.capability_vars.get(sub.id, set())
                   for sub in ast.walk(test))

    # --- the checks ---------------------------------------------------------------------------
    def report(self, node: ast.AST, names: set[str], what: str) -> None:
        if not self.has_fallback(node, names):
            self.violations.append(Violation(self.path, node.lineno, what))

    def scan(self) -> list[Violation]:
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "rclpy" and alias.name not in self.api.modules:
                        self.report(node, set(alias.name.split(".")), f"import {alias.name}: no such module in Humble")
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module.split(".")[0] == "rclpy":
                self._check_import_from(node)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
                module = self.resolve(node.value)
                if module in self.api.modules and not self.api.defines(module, node.attr):
                    self.report(node, {node.attr}, f"{module}.{node.attr}: not in Humble's {module}")
            elif isinstance(node, ast.Call):
                self._check_call(node)
        return sorted(self.violations, key=lambda v: (v.line, v.what))

    def _check_import_from(self, node: ast.ImportFrom) -> None:
        if node.module not in self.api.modules:
            names = {*node.module.split("."), *(alias.name for alias in node.names)}
            self.report(node, names, f"from {node.module} import ...: no such module in Humble")
            return
        for alias in node.names:
            if alias.name != "*" and not self.api.defines(node.module, alias.name):
                what = f"from {node.module} import {alias.name}: not in Humble's {node.module}"
                self.report(node, {alias.name}, what)

    def _check_call(self, call: ast.Call) -> None:
        dotted = self.resolve(call.func)
        if dotted is not None:
            module, rest = self.api.split(dotted)
            klass = f"{module}.{rest[0]}"
            if len(rest) == 1 and rest[0] in self.api.functions.get(module, {}):
                self._check_keywords(call, rest[0], [(dotted, self.api.functions[module][rest[0]])])
            elif len(rest) == 1 and klass in self.api.classes:
                signatures = self.api.classes[klass].get("__init__", [])  # none listed: __new__ or a base's
                if signatures:
                    self._check_keywords(call, rest[0], [(klass, sig) for sig in signatures])
            elif len(rest) == 2 and rest[1] in self.api.classes.get(klass, {}):
                self._check_keywords(call, rest[1], [(klass, sig) for sig in self.api.classes[klass][rest[1]]])
            return
        if not isinstance(call.func, ast.Attribute):
            return
        name, receiver = call.func.attr, self.type_of(call.func.value)
        if receiver == FOREIGN:
            return
        if isinstance(receiver, ast.ClassDef) and name in self.own_names[receiver]:
            return  # the subclass's own method or attribute
        methods = self._methods(receiver)
        if methods is not None:
            klass = self.humble_base(receiver) if isinstance(receiver, ast.ClassDef) else receiver
            if name in methods:
                self._check_keywords(call, name, [(klass, sig) for sig in methods[name]])
            elif klass in HUMBLE_BASES and not name.startswith("_") and (
                    not isinstance(receiver, ast.ClassDef) or len(receiver.bases) == 1):
                self.report(call, {name}, f".{name}(...): Humble's {_short(klass)} has no method {name}")
        elif receiver is None and self.uses_rclpy and (candidates := self.api.methods_named(name)):
            self._check_keywords(call, name, candidates)

    def _check_keywords(self, call: ast.Call, name: str, candidates: list[tuple[str, Signature]]) -> None:
        for keyword in call.keywords:
            if keyword.arg is not None and not any(sig.takes(keyword.arg) for _, sig in candidates):
                owners = sorted({_short(klass) for klass, _ in candidates})
                takes = sorted({k for _, sig in candidates for k in sig.keywords})
                self.report(call, {name, keyword.arg},
                            f"{name}(..., {keyword.arg}=...): no parameter {keyword.arg!r} in Humble's "
                            f"{' / '.join(owners)} (takes: {', '.join(takes) or 'no keywords'})")


def _short(dotted: str) -> str:
    return dotted.removeprefix("rclpy.")


def _defined_in(klass: ast.ClassDef) -> set[str]:
    """Names a class defines itself: in its body, or as self.attributes in its methods."""
    names = set()
    for node in klass.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    names.update(node.attr for node in ast.walk(klass) if isinstance(node, ast.Attribute)
                 and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name) and node.value.id == "self")
    return names


def _catches(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    names = {k.id if isinstance(k, ast.Name) else k.attr if isinstance(k, ast.Attribute) else None for k in kinds}
    return bool(names & FALLBACK_ERRORS)


def _call_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call):
        return node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
    return None


def _is_capability_check(expr: ast.AST) -> bool:
    return any(_call_name(node) in CAPABILITY_CHECKS for node in ast.walk(expr))


def _mentioned(expr: ast.AST) -> set[str]:
    """Names, attributes and strings an expression mentions."""
    names = set()
    for node in ast.walk(expr):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)
    return names


def scan_source(source: str, path: str, api: HumbleApi) -> list[Violation]:
    return _FileScan(ast.parse(source, filename=path), path, api).scan()


def scan_package(api: HumbleApi) -> list[Violation]:
    violations = []
    for directory in SCANNED_DIRS:
        for path in sorted((REPO_ROOT / directory).rglob("*.py")):
            relative = path.relative_to(REPO_ROOT).as_posix()
            violations += scan_source(path.read_text(encoding="utf-8"), relative, api)
    return sorted(violations, key=lambda v: (v.path, v.line, v.what))


@pytest.fixture(scope="module")
def api() -> HumbleApi:
    if not API_FILE.is_file():
        pytest.skip(f"{API_FILE} is absent: Humble's rclpy API listing ships in ../shared, not with the package")
    return HumbleApi.parse(API_FILE.read_text(encoding="utf-8"))


def _whats(source: str, api: HumbleApi) -> list[str]:
    return [f"{v.line}: {v.what}" for v in scan_source(source, "snippet.py", api)]


# --- the listing and the allow-lists --------------------------------------------------------------
def test_listing_is_read(api: HumbleApi):
    """The parser finds what the checks rely on (an empty parse would let everything pass)."""
    assert Signature.parse("self, timer_period_sec, callback, callback_group=…, clock=…").keywords == {
        "timer_period_sec", "callback", "callback_group", "clock"}
    assert api.classes["rclpy.node.Node"]["create_timer"][0].keywords == {
        "timer_period_sec", "callback", "callback_group", "clock"}
    assert api.functions["rclpy"]["init"].keywords == {"args", "context", "domain_id", "signal_handler_options"}
    assert api.classes["rclpy.qos.QoSProfile"]["__init__"][0].any_keyword
    assert {"rclpy", "rclpy.node", "rclpy.executors", "rclpy.action", "rclpy.action.server"} <= api.modules
    assert "rclpy.experimental" not in api.modules
    assert len(api.classes) > 50


def test_allow_lists_point_into_the_listing(api: HumbleApi):
    for name, origin in HUMBLE_REEXPORTS.items():
        module, rest = api.split(origin)
        assert len(rest) == 1 and (rest[0] in api.functions[module] or origin in api.classes), (name, origin)
    for module in HUMBLE_ASSIGNED:
        assert module in api.modules, module
    for klass, bases in HUMBLE_BASES.items():
        assert all(name in api.classes for name in (klass, *bases)), klass
    assert all(klass in api.classes for klass in RETURNS.values())


# --- the scanner on small sources ------------------------------------------------------------------
def test_scanner_rejects_create_timer_autostart(api: HumbleApi):
    source = (
        "from rclpy.node import Node\n"
        "\n"
        "class Watchdog(Node):\n"
        "    def __init__(self):\n"
        "        super().__init__('watchdog')\n"
        "        self.timer = self.create_timer(1.0, self.tick, autostart=False)\n"
        "\n"
        "def start(node, tick):\n"
        "    node.create_timer(1.0, tick, autostart=False)\n"
    )
    whats = _whats(source, api)
    assert len(whats) == 2, whats
    assert whats[0].startswith("6: create_timer(..., autostart=...): no parameter 'autostart' in Humble's node.Node")
    assert whats[1].startswith("9: create_timer(..., autostart=...)")


def test_scanner_rejects_events_executor_without_fallback(api: HumbleApi):
    source = (
        "import rclpy\n"
        "from rclpy.experimental import EventsExecutor\n"
        "\n"
        "def make():\n"
        "    return rclpy.experimental.EventsExecutor()\n"
    )
    assert _whats(source, api) == [
        "2: from rclpy.experimental import ...: no such module in Humble",
        "5: rclpy.experimental: not in Humble's rclpy",
    ]


@pytest.mark.parametrize("handler", ["ImportError", "ModuleNotFoundError", "(ImportError, AttributeError)"])
def test_scanner_accepts_events_executor_with_fallback(api: HumbleApi, handler: str):
    source = (
        "from rclpy.executors import SingleThreadedExecutor\n"
        "\n"
        "def make(node):\n"
        "    try:\n"
        "        from rclpy.experimental import EventsExecutor\n"
        f"    except {handler}:\n"
        "        return SingleThreadedExecutor(context=node.context)\n"
        "    return EventsExecutor(context=node.context)\n"
    )
    assert _whats(source, api) == []


@pytest.mark.parametrize("handler", ["Exception", "ValueError", ""])
def test_scanner_wants_a_named_fallback(api: HumbleApi, handler: str):
    source = (
        "try:\n"
        "    from rclpy.experimental import EventsExecutor\n"
        f"except {handler}:\n"
        "    EventsExecutor = None\n"
    )
    assert _whats(source, api) == ["2: from rclpy.experimental import ...: no such module in Humble"]


def test_scanner_accepts_good_calls(api: HumbleApi):
    source = (
        "import rclpy\n"
        "from rclpy.clock import Clock, ClockType\n"
        "from rclpy.executors import MultiThreadedExecutor\n"
        "from rclpy.node import Node\n"
        "from rclpy.qos import QoSProfile, qos_profile_sensor_data\n"
        "from rclpy.signals import SignalHandlerOptions\n"
        "\n"
        "class Blinker(Node):\n"
        "    def __init__(self):\n"
        "        super().__init__('blinker', parameter_overrides=[])\n"
        "        clock = Clock(clock_type=ClockType.STEADY_TIME)\n"
        "        self.timer = self.create_timer(1.0, self.tick, clock=clock)\n"
        "        self.timer.cancel()\n"
        "        self.declare_parameter('rate', 1.0, ignore_override=False)\n"
        "        self.create_subscription(int, 'x', self.tick, QoSProfile(depth=1), raw=True)\n"
        "\n"
        "    def tick(self, msg=None):\n"
        "        self.get_logger().info('tick', throttle_duration_sec=1.0)\n"
        "\n"
        "rclpy.init(args=None, signal_handler_options=SignalHandlerOptions.NO)\n"
        "executor = MultiThreadedExecutor(num_threads=2)\n"
        "executor.spin_once(timeout_sec=0.1)\n"
        "executor.shutdown(timeout_sec=1.0)\n"
        "print(rclpy.ok(), qos_profile_sensor_data)\n"
    )
    assert _whats(source, api) == []


def test_scanner_accepts_capability_checks(api: HumbleApi):
    source = (
        "import inspect\n"
        "import rclpy\n"
        "\n"
        "HAS_AUTOSTART = 'autostart' in inspect.signature(rclpy.node.Node.create_timer).parameters\n"
        "\n"
        "def start(node, tick):\n"
        "    if 'autostart' in inspect.signature(node.create_timer).parameters:\n"
        "        node.create_timer(1.0, tick, autostart=False)\n"
        "    timer = node.create_timer(1.0, tick, autostart=False) if HAS_AUTOSTART else None\n"
        "    if hasattr(rclpy, 'experimental'):\n"
        "        return rclpy.experimental.EventsExecutor()\n"
        "    try:\n"
        "        node.create_timer(1.0, tick, autostart=False)\n"
        "    except TypeError:\n"
        "        pass\n"
        "    return timer\n"
    )
    assert _whats(source, api) == []


def test_scanner_rejects_names_methods_and_keywords_humble_lacks(api: HumbleApi):
    source = (
        "import rclpy\n"
        "from rclpy.duration import Infinite\n"
        "from rclpy.executors import SingleThreadedExecutor\n"
        "\n"
        "rclpy.init(domain=3)\n"
        "node = rclpy.create_node('n', enable_logger_service=True)\n"
        "print(node.count_clients('/x'))\n"
        "executor = SingleThreadedExecutor()\n"
        "executor.shutdown(wait=True)\n"
    )
    whats = _whats(source, api)
    assert [w.split(":")[0] for w in whats] == ["2", "5", "6", "7", "9"], whats
    assert "Infinite" in whats[0] and "count_clients" in whats[3] and "Executor" in whats[4]


def test_scanner_leaves_other_packages_objects_alone(api: HumbleApi):
    source = (
        "import subprocess\n"
        "from concurrent.futures import ThreadPoolExecutor\n"
        "\n"
        "import rclpy\n"
        "\n"
        "pool = ThreadPoolExecutor(max_workers=1)\n"
        "pool.shutdown(wait=True, cancel_futures=True)\n"
        "subprocess.call(['true'], timeout=1)\n"
        "rclpy.shutdown()\n"
    )
    assert _whats(source, api) == []


# --- the package ------------------------------------------------------------------------------------
def test_package_uses_only_humble_rclpy(api: HumbleApi):
    violations = scan_package(api)
    assert not violations, (
        f"{len(violations)} use(s) of rclpy API that ROS 2 Humble lacks, without a fallback "
        "(see this test's docstring for what counts as one):\n" + "\n".join(map(str, violations)))
