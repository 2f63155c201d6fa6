"""Launch files and node parameter files are checked statically (no ros2launch wheels here)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml
from conftest import REPO_ROOT
from launch_check import (
    check_launch_arguments,
    check_launch_file,
    check_node_module,
    check_node_parameters,
    check_parameter_file,
    parameter_names,
)
from test_package import _console_scripts

LAUNCH_FILES = sorted((REPO_ROOT / "launch").glob("*.launch.py"))
CONFIG = REPO_ROOT / "config"
#: Node parameter files: config/<console script>.yaml.
PARAMETER_FILES = sorted(CONFIG / f"{name}.yaml" for name in _console_scripts() if (CONFIG / f"{name}.yaml").is_file())


def _launched_executables(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {k.value.value for k in ast.walk(tree) if isinstance(k, ast.keyword) and k.arg == "executable"
            and isinstance(k.value, ast.Constant)}


def test_there_are_launch_and_parameter_files():
    assert LAUNCH_FILES, "no launch/*.launch.py"
    assert PARAMETER_FILES, "no config/<console script>.yaml"


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launch_file(path: Path):
    assert check_launch_file(path, set(_console_scripts()), CONFIG) == []
    assert check_launch_arguments(path) == []
    assert check_node_parameters(path, CONFIG) == []


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launched_nodes_have_a_parameter_file_and_a_readme_entry(path: Path):
    for executable in _launched_executables(path):
        own_file = CONFIG / f"{executable}.yaml"
        assert own_file.is_file(), f"{path.name} starts {executable}: no config/{own_file.name}"
    assert f"`{path.name}`" in (REPO_ROOT / "launch" / "README.md").read_text(), f"{path.name} not in launch/README.md"


@pytest.mark.parametrize("path", PARAMETER_FILES, ids=lambda p: p.name)
def test_parameter_file(path: Path):
    assert check_parameter_file(path) == []


@pytest.mark.parametrize("path", PARAMETER_FILES, ids=lambda p: p.name)
def test_node_code_matches_its_parameter_file(path: Path):
    module = REPO_ROOT / "dvrk_ident_ros" / "nodes" / f"{path.stem}.py"
    if not module.is_file():
        pytest.skip(f"{module.relative_to(REPO_ROOT)} is not written yet")
    assert check_node_module(module, path) == []


def _differences_with_rcl(path: Path) -> list[str]:
    """Parameters that rcl's own YAML parser reads differently from yaml.safe_load (value or type)."""
    import rclpy
    from rclpy.parameter import Parameter

    parameters = yaml.safe_load(path.read_text())["/**"]["ros__parameters"]
    expected = {}
    for name in parameter_names(path):  # nested mappings are dotted names to ROS
        value = parameters
        for part in name.split("."):
            value = value[part]
        expected[name] = value
    context = rclpy.Context()
    rclpy.init(args=["--ros-args", "--params-file", str(path)], context=context)
    try:
        node = rclpy.create_node("any_name_at_all", context=context,
                                 automatically_declare_parameters_from_overrides=True)
        try:
            got = {name: node.get_parameter(name) for name in expected if node.has_parameter(name)}
        finally:
            node.destroy_node()
    finally:
        context.try_shutdown()
    differences = []
    for name, value in expected.items():
        if name not in got:
            differences.append(f"{name}: not given to the node")
        elif (Parameter.Type.from_parameter_value(value), value) != (got[name].type_, got[name].value):
            differences.append(f"{name}: {value!r} for yaml, {got[name].value!r} ({got[name].type_.name}) for rcl")
    return differences


@pytest.mark.ros
@pytest.mark.parametrize("path", PARAMETER_FILES, ids=lambda p: p.name)
def test_parameter_file_as_read_by_rcl(path: Path, ros_env):
    """rcl's own YAML parser gives a node of any name the same parameters, with the same types."""
    assert _differences_with_rcl(path) == []


@pytest.mark.ros
def test_rcl_comparison_sees_a_difference(tmp_path: Path, ros_env):
    path = tmp_path / "bad.yaml"
    path.write_text("/**:\n  ros__parameters:\n    arm: PSM1\n    rate: 1e3\n")  # a str to YAML 1.1, a double to rcl
    assert [d.split(":")[0] for d in _differences_with_rcl(path)] == ["rate"]


_GOOD = '''
from launch import LaunchDescription
from launch_ros.actions import Node

def generate_launch_description():
    return LaunchDescription([Node(package="dvrk_ident", executable="tool", parameters=["config/p.yaml"])])
'''


def test_checker_accepts_a_good_file(tmp_path: Path):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "p.yaml").write_text("{}")
    (tmp_path / "good.launch.py").write_text(_GOOD)
    assert check_launch_file(tmp_path / "good.launch.py", {"tool"}, tmp_path / "config") == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (_GOOD.replace('"tool"', '"missing_node"'), "unknown executable 'missing_node'"),
        (_GOOD.replace("p.yaml", "absent.yaml"), "config file 'config/absent.yaml' does not exist"),
        (_GOOD.replace("return", "return ("), "does not compile"),
        (_GOOD.replace("generate_launch_description", "make"), "no generate_launch_description"),
    ],
)
def test_checker_rejects_a_bad_file(tmp_path: Path, source: str, expected: str):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "p.yaml").write_text("{}")
    (tmp_path / "bad.launch.py").write_text(source)
    problems = check_launch_file(tmp_path / "bad.launch.py", {"tool"}, tmp_path / "config")
    assert any(expected in p for p in problems), problems


_ARGS = '''
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("arm", default_value="PSM1"),
        DeclareLaunchArgument(name="sim", default_value="false"),
        Node(package="dvrk_ident", executable="tool",
             parameters=["config/tool.yaml", {"arm": LaunchConfiguration("arm"), "use_sim_time": True}],
             condition=IfCondition(LaunchConfiguration(variable_name="sim"))),
    ])
'''
_TOOL_YAML = "/**:\n  ros__parameters:\n    arm: PSM1\n    rate: 100.0\n"


def _launch_fixture(tmp_path: Path, source: str) -> Path:
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "tool.yaml").write_text(_TOOL_YAML)
    (tmp_path / "x.launch.py").write_text(source)
    return tmp_path / "x.launch.py"


def test_argument_and_parameter_checks_accept_a_good_file(tmp_path: Path):
    path = _launch_fixture(tmp_path, _ARGS)
    assert check_launch_file(path, {"tool"}, tmp_path / "config") == []
    assert check_launch_arguments(path) == []
    assert check_node_parameters(path, tmp_path / "config") == []


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (_ARGS.replace('LaunchConfiguration("arm")', 'LaunchConfiguration("amr")'),
         "LaunchConfiguration 'amr' is not a declared launch argument"),
        (_ARGS.replace('variable_name="sim"', 'variable_name="simulate"'),
         "LaunchConfiguration 'simulate' is not a declared launch argument"),
        (_ARGS.replace('LaunchConfiguration("arm")', '"PSM2"'), "launch argument 'arm' is declared but never used"),
        (_ARGS.replace('name="sim"', 'name="arm"'), "launch argument 'arm' declared twice"),
        (_ARGS.replace('LaunchConfiguration("arm")', "LaunchConfiguration(ARM)"), "is not a literal string"),
    ],
)
def test_argument_check_rejects_a_bad_file(tmp_path: Path, source: str, expected: str):
    problems = check_launch_arguments(_launch_fixture(tmp_path, source))
    assert any(expected in p for p in problems), problems


def test_argument_check_accepts_a_configuration_with_a_default_or_set(tmp_path: Path):
    source = _ARGS.replace('LaunchConfiguration("arm")', 'LaunchConfiguration("arm", default="PSM1")')
    source = source.replace('DeclareLaunchArgument("arm", default_value="PSM1")',
                            'SetLaunchConfiguration("other", "x"), LaunchConfiguration("other")')
    assert check_launch_arguments(_launch_fixture(tmp_path, source)) == []


@pytest.mark.parametrize(
    ("source", "yaml_text", "expected"),
    [
        (_ARGS.replace('{"arm"', '{"amr"'), _TOOL_YAML, "'amr' is not a parameter of config/tool.yaml"),
        (_ARGS.replace('executable="tool"', 'executable="other"'), _TOOL_YAML,
         "other sets parameters but config/other.yaml does not exist"),
        (_ARGS, "tool:\n  ros__parameters:\n    arm: PSM1\n", "config/tool.yaml is not a parameter file"),
    ],
)
def test_parameter_check_rejects_a_bad_file(tmp_path: Path, source: str, yaml_text: str, expected: str):
    path = _launch_fixture(tmp_path, source)
    (tmp_path / "config" / "tool.yaml").write_text(yaml_text)
    problems = check_node_parameters(path, tmp_path / "config")
    assert any(expected in p for p in problems), problems


def test_parameter_file_check_accepts_a_good_file(tmp_path: Path):
    path = tmp_path / "tool.yaml"
    path.write_text("/**:\n  ros__parameters:\n    # the arm\n    arm: PSM1\n    rate: 100.0\n    noise: true\n"
                    "    names: [a, b]\n    gains:\n      p: 1.0\n      d: 0.1\n    empty: \"\"\n")
    assert check_parameter_file(path) == []
    assert parameter_names(path) == {"arm", "rate", "noise", "names", "gains.p", "gains.d", "empty"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("tool:\n  ros__parameters:\n    arm: PSM1\n", "exactly one top-level key '/**'"),
        ("/**:\n  arm: PSM1\n", "to hold exactly 'ros__parameters'"),
        ("/**:\n  ros__parameters: {}\n", "not a non-empty mapping"),
        ("/**:\n  ros__parameters:\n    topics: []\n", "topics is an empty list"),
        ("/**:\n  ros__parameters:\n    bag_path:\n", "bag_path has no value"),
        ("/**:\n  ros__parameters:\n    gains: [1, 2.5]\n", "gains is not a list of values of one type"),
        ("/**:\n  ros__parameters:\n    day: 2024-01-01\n", "day is a date"),
        ("/**:\n  ros__parameters:\n    on: true\n", "parameter name True is read as a bool"),
        ("/**:\n  ros__parameters:\n    gains:\n      1: 0.5\n", "parameter name 1 is read as a int"),
        ("/**:\n  ros__parameters:\n    arm: [PSM1\n", "does not parse"),
    ],
)
def test_parameter_file_check_rejects_a_bad_file(tmp_path: Path, text: str, expected: str):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    problems = check_parameter_file(path)
    assert any(expected in p for p in problems), problems


_NODE = '''
class Tool(Node):
    def __init__(self):
        super().__init__("tool")
        self.arm = self.declare_parameter("arm", "PSM1").value
        self.rate = self.declare_parameter("rate", 100.0).value
        self.topics = self.declare_parameter("topics", [], ParameterDescriptor(dynamic_typing=True)).value
'''


def test_node_module_check_accepts_a_matching_node(tmp_path: Path):
    (tmp_path / "tool.py").write_text(_NODE)
    (tmp_path / "tool.yaml").write_text(_TOOL_YAML)
    assert check_node_module(tmp_path / "tool.py", tmp_path / "tool.yaml") == []


@pytest.mark.parametrize(
    ("yaml_text", "expected"),
    [
        (_TOOL_YAML.replace("100.0", "100"), "'rate' is declared double (100.0) but tool.yaml gives integer (100)"),
        (_TOOL_YAML.replace("PSM1", "[PSM1]"), "'arm' is declared string ('PSM1') but tool.yaml gives string[]"),
        (_TOOL_YAML + "    rtae: 1.0\n", "'rtae' is not named in tool.py: the node would ignore it"),
    ],
)
def test_node_module_check_rejects_a_mismatch(tmp_path: Path, yaml_text: str, expected: str):
    (tmp_path / "tool.py").write_text(_NODE)
    (tmp_path / "tool.yaml").write_text(yaml_text)
    problems = check_node_module(tmp_path / "tool.py", tmp_path / "tool.yaml")
    assert any(expected in p for p in problems), problems
