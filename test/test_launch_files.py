"""Launch files and node parameter files are checked statically (no ros2launch wheels here)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml
from conftest import REPO_ROOT
from launch_check import (
    check_argument_conventions,
    check_exit_handlers,
    check_launch_arguments,
    check_launch_file,
    check_node_parameters,
    check_parameter_file,
    parameter_names,
    required_executables,
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
    assert check_exit_handlers(path) == []
    assert check_argument_conventions(path) == []


#: The node that does each launch file's job: its exit ends the launch, with its status.
REQUIRED = {
    "collect.launch.py": {"trajectory_player"},
    "gc_calibration.launch.py": {"gc_calibration"},
    "gravity_compensation.launch.py": {"gravity_compensation"},
    "identify.launch.py": {"identification_service"},
    "sim.launch.py": {"simulated_arm"},
}


def test_every_launch_file_ends_with_the_status_of_the_node_that_does_its_job():
    assert {p.name: required_executables(p) for p in LAUNCH_FILES} == REQUIRED


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_launched_nodes_have_a_parameter_file_and_a_readme_entry(path: Path):
    for executable in _launched_executables(path):
        own_file = CONFIG / f"{executable}.yaml"
        assert own_file.is_file(), f"{path.name} starts {executable}: no config/{own_file.name}"
    assert f"`{path.name}`" in (REPO_ROOT / "launch" / "README.md").read_text(), f"{path.name} not in launch/README.md"


@pytest.mark.parametrize("path", PARAMETER_FILES, ids=lambda p: p.name)
def test_parameter_file(path: Path):
    assert check_parameter_file(path) == []


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


# -- exit handlers and argument conventions ------------------------------------------------------------------------
_HANDLED = '''
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from dvrk_ident_ros.jobs.launch_support import canonical_arguments, exit_handler

def generate_launch_description():
    arm = LaunchConfiguration("arm")
    sim = LaunchConfiguration("sim")
    worker = Node(package="dvrk_ident", executable="tool", parameters=[{"arm": arm}])
    helper = Node(package="dvrk_ident", executable="other", condition=IfCondition(sim))
    return LaunchDescription([
        DeclareLaunchArgument("arm", default_value="PSM1"),
        DeclareLaunchArgument("sim", default_value="false"),
        DeclareLaunchArgument("home", default_value=sim),
        DeclareLaunchArgument("mode", default_value="fast", choices=["fast", "slow"]),
        canonical_arguments(booleans=("sim", "home"), arm="arm"),
        worker,
        helper,
        exit_handler(worker, "the worker", required=True),
        exit_handler(helper, "the helper"),
    ])
'''


def test_handler_and_convention_checks_accept_a_good_file(tmp_path: Path):
    path = tmp_path / "x.launch.py"
    path.write_text(_HANDLED)
    assert check_exit_handlers(path) == []
    assert check_argument_conventions(path) == []
    assert required_executables(path) == {"tool"}


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ('        exit_handler(helper, "the helper"),\n', "", "node 'helper' has no exit_handler"),
        ("required=True", "required=False", "no exit_handler(..., required=True)"),
        ("        worker,\n", '        Node(package="dvrk_ident", executable="third"),\n        worker,\n',
         "a Node not bound to a name"),
        ("from dvrk_ident_ros.jobs.launch_support import canonical_arguments, exit_handler",
         "from dvrk_ident_ros.jobs.launch_support import canonical_arguments\nfrom elsewhere import exit_handler",
         "does not import exit_handler from dvrk_ident_ros.jobs.launch_support"),
    ],
)
def test_handler_check_rejects_a_bad_file(tmp_path: Path, old: str, new: str, expected: str):
    assert old in _HANDLED
    path = tmp_path / "x.launch.py"
    path.write_text(_HANDLED.replace(old, new))
    problems = check_exit_handlers(path)
    assert any(expected in p for p in problems), problems


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ('"sim", default_value="false")', '"sim", default_value="false", choices=["true", "false"])',
         "boolean argument 'sim' has choices"),
        ('"arm", default_value="PSM1")', '"arm", default_value="PSM1", choices=["PSM1", "PSM2"])',
         "argument 'arm' has choices"),
        ('booleans=("sim", "home")', 'booleans=("sim",)', "boolean argument 'home' is not made canonical"),
        ('booleans=("sim", "home"), arm="arm"', 'booleans=("sim", "home")', "argument 'arm' is not made canonical"),
    ],
)
def test_convention_check_rejects_a_bad_file(tmp_path: Path, old: str, new: str, expected: str):
    assert old in _HANDLED
    path = tmp_path / "x.launch.py"
    path.write_text(_HANDLED.replace(old, new))
    problems = check_argument_conventions(path)
    assert any(expected in p for p in problems), problems


# -- dvrk-ident launch: the same plan as the launch file ------------------------------------------------------------
def _node_dicts(path: Path) -> dict[str, set[str]]:
    """executable -> names of the parameters its Node(...) sets in a dict."""
    tree = ast.parse(path.read_text())
    out = {}
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and getattr(call.func, "id", None) == "Node":
            keywords = {k.arg: k.value for k in call.keywords}
            names = {key.value for d in keywords["parameters"].elts if isinstance(d, ast.Dict) for key in d.keys}
            out[keywords["executable"].value] = names
    return out


#: Arguments that make every node of the file start.
_EVERY_NODE = {"collect": ["sim:=true"], "gravity_compensation": ["parameter_file:=gc.json"],
               "gc_calibration": ["sim:=true", "serial:=1"]}


@pytest.mark.parametrize("path", LAUNCH_FILES, ids=lambda p: p.name)
def test_dvrk_ident_launch_runs_the_plan_of_the_launch_file(path: Path):
    from dvrk_ident_ros.jobs.launch_commands import declared_arguments, launch_plan

    name = path.name.removesuffix(".launch.py")
    nodes = launch_plan(name, _EVERY_NODE.get(name, []))
    dicts = _node_dicts(path)
    assert {n.node for n in nodes} == set(dicts) == _launched_executables(path)
    for n in nodes:
        assert set(n.parameters) - {"use_sim_time"} == dicts[n.node] - {"use_sim_time"}, n.node
    assert {n.node for n in nodes if n.required} == REQUIRED[path.name]
    assert [a.name for a in declared_arguments(path)] == [
        _literal_name(c) for c in ast.walk(ast.parse(path.read_text()))
        if isinstance(c, ast.Call) and getattr(c.func, "id", None) == "DeclareLaunchArgument"]


def _literal_name(call: ast.Call) -> str:
    return call.args[0].value


def test_collect_plan_follows_the_arguments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from dvrk_ident_ros.errors import LaunchArgumentError
    from dvrk_ident_ros.jobs.launch_commands import launch_plan

    nodes = launch_plan("collect", ["arm:=mtml", "sim:=True", "autostart:=0"])
    by_node = {n.node: n for n in nodes}
    assert [n.name for n in nodes] == ["simulated_arm_MTML", "recorder_MTML", "trajectory_player_MTML"]
    player = by_node["trajectory_player"].parameters
    assert player["arm"] == "MTML" and player["autostart"] is False and player["home_arm"] is True  # home_arm = sim
    assert player["use_sim_time"] is True and by_node["recorder"].parameters["use_sim_time"] is True
    assert player["trajectory_file"] == str(REPO_ROOT / "config" / "trajectories" / "mtm_fourier.yaml")
    assert by_node["simulated_arm"].parameters["publish_rate"] == 100.0  # the bridge's default
    fast = launch_plan("collect", ["arm:=PSM1", "sim:=true", "sim_rate:=1000"])[0]
    assert fast.node == "simulated_arm" and fast.parameters["publish_rate"] == 1000.0
    with pytest.raises(LaunchArgumentError, match="sim_rate"):
        launch_plan("collect", ["arm:=PSM1", "sim:=true", "sim_rate:=fast"])
    nodes = launch_plan("collect", ["arm:=PSM2", "home_arm:=FALSE"])
    assert [n.node for n in nodes] == ["recorder", "trajectory_player"]  # sim false: no simulated arm
    assert nodes[1].parameters["home_arm"] is False and "use_sim_time" not in nodes[1].parameters
    # the trajectory by the one rule: the working directory first, then the package share
    monkeypatch.chdir(tmp_path)
    (tmp_path / "config" / "grids").mkdir(parents=True)
    (tmp_path / "config" / "grids" / "mtml_gc_grid.yaml").write_text("local copy")
    nodes = launch_plan("collect", ["arm:=MTML", "trajectory_file:=config/grids/mtml_gc_grid.yaml"])
    assert nodes[-1].parameters["trajectory_file"] == str(tmp_path / "config" / "grids" / "mtml_gc_grid.yaml")
    nodes = launch_plan("collect", ["arm:=MTMR", "trajectory_file:=config/grids/mtmr_gc_grid.yaml"])
    assert nodes[-1].parameters["trajectory_file"] == str(REPO_ROOT / "config" / "grids" / "mtmr_gc_grid.yaml")


@pytest.mark.parametrize(
    ("file", "given", "expected"),
    [
        ("collect", ["arm:=PSM4"], "unknown arm 'PSM4'"),
        ("collect", ["sim:=yes"], "sim:='yes' is not a boolean"),
        ("collect", ["trajectory_file:=no/such/file.yaml"], "'no/such/file.yaml' not found"),
        ("collect", ["speed:=2"], "unknown launch argument 'speed'"),
        ("collect", ["arm=PSM1"], "malformed launch argument 'arm=PSM1'"),
        ("gravity_compensation", [], "launch argument parameter_file is required"),
        ("sim", ["initial_state:=ready"], "initial_state:='ready': expected one of DISABLED"),
        ("sim", ["publish_rate:=fast"], "publish_rate:='fast' is not a number"),
        ("nothing", [], "unknown launch file 'nothing'"),
    ],
)
def test_dvrk_ident_launch_refuses_bad_arguments_before_any_node_starts(file: str, given: list[str], expected: str):
    from dvrk_ident_ros.errors import DvrkIdentError
    from dvrk_ident_ros.jobs.launch_commands import launch_plan

    with pytest.raises(DvrkIdentError) as info:
        launch_plan(file, given)
    assert expected in str(info.value)
