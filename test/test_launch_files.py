"""The launch files: built from their plans (dvrk_ident_ros/jobs/launch_plans.py), which are checked here
without ros2launch; the node parameter files (config/<node>.yaml) statically. test_ros2_tools.py runs the launch
files through the real ``ros2 launch`` where it is built."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml
from conftest import REPO_ROOT
from launch_check import check_parameter_file, parameter_names
from test_package import _console_scripts

from dvrk_ident_ros.jobs.launch_plans import LAUNCH_FILES, NODE_ROLES, launch_plan
from dvrk_ident_ros.parameters import SCHEMAS

LAUNCH_PATHS = sorted((REPO_ROOT / "launch").glob("*.launch.py"))
CONFIG = REPO_ROOT / "config"
#: Node parameter files: config/<console script>.yaml.
PARAMETER_FILES = sorted(CONFIG / f"{name}.yaml" for name in _console_scripts() if (CONFIG / f"{name}.yaml").is_file())
#: Parameters every ROS node has.
BUILTIN_PARAMETERS = {"use_sim_time"}
#: The node that does each launch file's job: its exit ends the launch, with its status.
REQUIRED = {
    "collect": {"trajectory_player"},
    "gc_calibration": {"gc_calibration"},
    "gravity_compensation": {"gravity_compensation"},
    "identify": {"identification_service"},
    "sim": {"simulated_arm"},
}
#: Arguments that make every node of the file start.
_EVERY_NODE = {"collect": ["sim:=true"], "gravity_compensation": ["parameter_file:=gc.json"],
               "gc_calibration": ["sim:=true", "serial:=1"]}


def _built_from(path: Path) -> str | None:
    """The plan a launch file's generate_launch_description() returns launch_description(<name>) of, if it does
    only that."""
    tree = ast.parse(path.read_text(), filename=str(path))
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "generate_launch_description"]
    if len(functions) != 1:
        return None
    body = [n for n in functions[0].body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or not isinstance(body[0].value, ast.Call):
        return None
    call = body[0].value
    if getattr(call.func, "id", None) != "launch_description" or len(call.args) != 1:
        return None
    return call.args[0].value if isinstance(call.args[0], ast.Constant) else None


def test_every_launch_file_is_built_from_its_plan():
    stems = {p.name.removesuffix(".launch.py") for p in LAUNCH_PATHS}
    assert stems == set(LAUNCH_FILES) == set(REQUIRED)
    readme = (REPO_ROOT / "launch" / "README.md").read_text()
    for path in LAUNCH_PATHS:
        assert _built_from(path) == path.name.removesuffix(".launch.py"), path.name
        assert f"`{path.name}`" in readme, f"{path.name} not in launch/README.md"


def test_the_check_of_a_launch_file_sees_a_node_written_by_hand(tmp_path: Path):
    path = tmp_path / "x.launch.py"
    path.write_text("from dvrk_ident_ros.jobs.launch_support import launch_description\n\n\n"
                    "def generate_launch_description():\n    return launch_description(\"sim\")\n")
    assert _built_from(path) == "sim"
    path.write_text(path.read_text().replace("    return", "    extra = Node(executable='recorder')\n    return"))
    assert _built_from(path) is None


@pytest.mark.parametrize("name", sorted(LAUNCH_FILES))
def test_every_planned_node_is_a_node_of_the_package_with_its_own_parameters(name: str):
    nodes = launch_plan(name, _EVERY_NODE.get(name, []))
    scripts = set(_console_scripts())
    assert {n.node for n in nodes if n.required} == REQUIRED[name]
    assert len({n.label for n in nodes}) == len(nodes), "two nodes of one launch with one name"
    for n in nodes:
        assert n.node in scripts and n.node in NODE_ROLES, n.node
        assert (CONFIG / f"{n.node}.yaml").is_file(), f"{name} starts {n.node}: no config/{n.node}.yaml"
        unknown = set(n.parameters) - {p.name for p in SCHEMAS[n.node]} - BUILTIN_PARAMETERS
        assert not unknown, f"{name}: {sorted(unknown)} are not parameters of {n.node}"
        for parameter, value in n.parameters.items():  # what launch_ros passes: typed values, not text to parse
            if parameter in BUILTIN_PARAMETERS:
                continue
            SCHEMAS[n.node][parameter].check(value)


@pytest.mark.parametrize("name", sorted(LAUNCH_FILES))
def test_argument_conventions(name: str):
    """A boolean argument and the arm have no choices (they would refuse True, 1, psm1): the plan makes them
    canonical; every argument is described; a default_from names an argument declared before it."""
    arguments = LAUNCH_FILES[name].arguments
    seen = set()
    for a in arguments:
        assert a.description, a.name
        if a.default in ("true", "false") or a.default_from or a.name == "arm":
            assert not a.choices, a.name
        if a.default_from:
            assert a.default_from in seen, a.name
        seen.add(a.name)
    assert len(seen) == len(arguments), "an argument declared twice"


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



# -- dvrk-ident launch and ros2 launch: the same plan ----------------------------------------------------------
def test_collect_plan_follows_the_arguments(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from dvrk_ident_ros.errors import LaunchArgumentError
    from dvrk_ident_ros.jobs.launch_plans import launch_plan

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
    from dvrk_ident_ros.jobs.launch_plans import launch_plan

    with pytest.raises(DvrkIdentError) as info:
        launch_plan(file, given)
    assert expected in str(info.value)
