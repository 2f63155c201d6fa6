"""The package's exceptions (dvrk_ident_ros/errors.py): one tree under DvrkIdentError, every class defined there,
and a limit error that carries its values."""
from __future__ import annotations

import ast

import numpy as np
import pytest
from conftest import REPO_ROOT

from dvrk_ident_ros import errors


def test_every_exception_class_of_the_package_is_in_errors_py_under_dvrk_ident_error():
    """No module but errors.py defines an exception class (a class deriving from a name ending in Error or
    Exception); every class in errors.py derives from DvrkIdentError."""
    elsewhere = []
    for path in sorted((REPO_ROOT / "dvrk_ident_ros").rglob("*.py")):
        if path.name == "errors.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                    (getattr(b, "id", None) or getattr(b, "attr", "")).endswith(("Error", "Exception"))
                    for b in node.bases):
                elsewhere.append(f"{path.relative_to(REPO_ROOT)}: {node.name}")
    assert not elsewhere, elsewhere
    classes = [v for v in vars(errors).values() if isinstance(v, type) and issubclass(v, BaseException)]
    assert len(classes) >= 15
    assert all(issubclass(c, errors.DvrkIdentError) for c in classes), classes


def test_a_limit_error_carries_the_joint_the_value_and_the_limits():
    from dvrk_ident_ros.model.arm_model import load_model
    from dvrk_ident_ros.safety import CommandChecker

    checker = CommandChecker(load_model("psm"), torque_limit=np.full(7, 2.0))
    q = np.zeros(7)
    q[2], q[6] = 0.12, 0.5
    q[0] = 2.0  # beyond the yaw's 1.45 rad
    with pytest.raises(errors.LimitError) as caught:
        checker.position(q, "move_jp goal")
    e = caught.value
    assert (e.what, e.joint, e.value, e.upper) == ("move_jp goal", "q1", 2.0, 1.45)
    assert e.excess == pytest.approx(0.55) and isinstance(e, errors.SafetyError)
    with pytest.raises(errors.LimitError) as caught:
        checker.torque(np.array([0.0, -3.0, 0, 0, 0, 0, 0]))
    assert (caught.value.joint, caught.value.value, caught.value.lower) == ("pitch", -3.0, -2.0)
