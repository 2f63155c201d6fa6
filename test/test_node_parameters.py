"""The parameter schemas (dvrk_ident_ros.parameters): their checks; config/<node>.yaml, the documentation's parameter
tables and the core's defaults against them; and, on a running gravity_compensation node, what
``ros2 param describe`` / ``ros2 param set`` get through the node's parameter services."""
from __future__ import annotations

import re

import numpy as np
import pytest
import yaml
from conftest import REPO_ROOT
from helpers.processes import running

from dvrk_ident_ros.errors import DvrkIdentError, ParameterValueError
from dvrk_ident_ros.parameters import SCHEMAS, Kind, NodeSchema, Parameter

CONFIG = REPO_ROOT / "config"


# -- the schema's checks (ROS-free) -----------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "value", "expected"), [
    ("torque_limit_scale", 1, 1.0),  # -p x:=1 for a double: 1.0
    ("torque_limit_scale", 0.5, 0.5),
    ("publish_diagnostics", False, False),
])
def test_coerce_accepts_and_converts(name: str, value, expected):
    got = SCHEMAS["gravity_compensation"][name].coerce(value)
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize(("node", "name", "value", "message"), [
    ("identification_service", "allow_queue", "banana", "allow_queue 'banana': expected a bool (true or false)"),
    ("identification_service", "allow_queue", 1, "allow_queue 1: expected a bool"),
    ("gravity_compensation", "torque_limit_scale", 0.0, "torque_limit_scale 0.0: expected (0, 1]"),
    ("gravity_compensation", "torque_limit_scale", 1.5, "torque_limit_scale 1.5: expected (0, 1]"),
    ("gravity_compensation", "torque_limit_scale", True, "expected a number"),
    ("gravity_compensation", "torque_limit_scale", float("nan"), "expected a finite number"),
    ("gravity_compensation", "stale_periods", 1.0, "stale_periods 1.0: expected more than 1 period"),
    ("trajectory_player", "ready_timeout", 0.0, "ready_timeout 0.0 s: expected > 0 s"),
    ("trajectory_player", "stream_rate", 5000.0, "stream_rate 5000.0 Hz: expected 1..2000 Hz"),
    ("trajectory_player", "periods", -1, "periods -1: expected >= 0"),
    ("trajectory_player", "periods", 1.5, "expected an integer"),
    ("recorder", "extra_topics", [1, 2], "extra_topics [1, 2]: expected a list of strings"),
    ("simulated_arm", "dvrk_version", 2.5, "dvrk_version '2.5': expected one of 2.3, 2.4"),
    ("simulated_arm", "initial_state", "READY", "expected one of DISABLED, ENABLED, HOMED, FAULT"),
    ("simulated_arm", "initial_position", ["a"], "expected a list of numbers"),
])
def test_coerce_refuses_with_the_reason(node: str, name: str, value, message: str):
    with pytest.raises(ParameterValueError) as raised:
        SCHEMAS[node][name].coerce(value)
    assert message in str(raised.value)


def test_coerce_takes_the_forms_ros_gives():
    sim, recorder = SCHEMAS["simulated_arm"], SCHEMAS["recorder"]
    assert sim["dvrk_version"].coerce(2.3) == "2.3"  # -p dvrk_version:=2.3 arrives as a double
    assert sim["initial_state"].coerce("homed") == "homed"  # case ignored (the simulator upper-cases it)
    assert sim["initial_position"].coerce([0, 1]) == [0.0, 1.0]
    assert recorder["extra_topics"].coerce(None) == [] and recorder["extra_topics"].coerce(b"") == []


def test_a_schema_refuses_a_parameter_listed_twice():
    p = Parameter("x", Kind.BOOL, True, "x")
    with pytest.raises(ValueError, match="listed twice"):
        NodeSchema("node", (p, p))


def test_every_run_time_parameter_says_how_it_takes_effect():
    runtime = {node: schema.runtime() for node, schema in SCHEMAS.items()}
    assert runtime == {"trajectory_player": ("speed_scale",), "recorder": (),
                       "identification_service": ("allow_queue",),
                       "gravity_compensation": ("torque_limit_scale", "publish_diagnostics"),
                       "simulated_arm": ("kinematic_gc",),
                       "gc_calibration": (), "gc_safety_net": ()}
    for node, names in runtime.items():
        for name in names:
            assert "at run time:" in SCHEMAS[node][name].description, (node, name)


# -- config/<node>.yaml, the README and the core's defaults against the schemas ---------------------------------------
def test_every_node_with_a_parameter_file_has_a_schema():
    from test_package import _console_scripts

    with_file = {name for name in _console_scripts() if (CONFIG / f"{name}.yaml").is_file()}
    assert with_file == set(SCHEMAS)


def parameter_file_problems(schema: NodeSchema, text: str) -> list[str]:
    """Where a node parameter file differs from the schema: names, values, types; a parameter without a
    default must be left out of the file (an empty list has no type there) but named in a comment."""
    given = yaml.safe_load(text)["/**"]["ros__parameters"]
    problems = [f"{name}: not a parameter of {schema.node}" for name in given if name not in schema]
    for p in schema:
        if p.default is None:
            if p.name in given:
                problems.append(f"{p.name}: has no default (not set = {p.render_default()}): leave it out")
            elif not re.search(rf"^\s*#.*\b{p.name}\b", text, re.MULTILINE):
                problems.append(f"{p.name}: left out without a comment naming it")
            continue
        if p.name not in given:
            problems.append(f"{p.name}: missing (default {p.render_default()})")
            continue
        value, default = given[p.name], list(p.default) if isinstance(p.default, tuple) else p.default
        if value != default or type(value) is not type(default) or (
                isinstance(value, list) and [type(v) for v in value] != [type(v) for v in default]):
            problems.append(f"{p.name}: {value!r} in the file, {default!r} in the schema")
    return problems


@pytest.mark.parametrize("node", sorted(SCHEMAS))
def test_parameter_file_matches_the_schema(node: str):
    assert parameter_file_problems(SCHEMAS[node], (CONFIG / f"{node}.yaml").read_text()) == []


def test_parameter_file_check_sees_a_difference():
    schema = SCHEMAS["identification_service"]
    good = (CONFIG / "identification_service.yaml").read_text()
    assert parameter_file_problems(schema, good.replace("allow_queue: false", "allow_queue: 0")) == [
        "allow_queue: 0 in the file, False in the schema"]
    assert parameter_file_problems(schema, good + "    alow_queue: true\n") == [
        "alow_queue: not a parameter of identification_service"]
    recorder = (CONFIG / "recorder.yaml").read_text()
    assert parameter_file_problems(SCHEMAS["recorder"], recorder + "    extra_topics: [/a]\n") == [
        "extra_topics: has no default (not set = (not set)): leave it out"]


def test_the_parameter_reference_and_files_are_the_schemas(monkeypatch):
    """docs/reference/parameters.md and config/<node>.yaml are what the generator makes of the schemas (every
    node's table in the page once); the files' values are the schemas' defaults (checked above)."""
    from dvrk_ident_ros.parameters.reference import main, page_path

    monkeypatch.chdir(REPO_ROOT)
    assert main(["--check"]) == 0, "run python -m dvrk_ident_ros.parameters.reference"
    page = page_path(REPO_ROOT).read_text()
    for node, schema in SCHEMAS.items():
        assert page.count(f"## `{node}`") == 1 and schema.table() in page
    assert main(["--bad"]) == 2


def test_the_reference_check_sees_a_stale_page(tmp_path, monkeypatch, capsys):
    from dvrk_ident_ros.parameters.reference import config_path, main, page_path, reference

    monkeypatch.chdir(tmp_path)
    assert main(["--check"]) == 1  # no page, no files
    assert main([]) == 0 and page_path(tmp_path).read_text() == reference()
    assert main(["--check"]) == 0
    page_path(tmp_path).write_text(reference().replace("recordings", "bags"))
    recorder = config_path("recorder", tmp_path)
    recorder.write_text(recorder.read_text() + "    gap_threshold: 1.0\n")
    capsys.readouterr()
    assert main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "parameters.md: not what the schemas make" in out and "recorder.yaml: not what the schemas make" in out


def test_schema_defaults_are_the_cores():
    from dvrk_ident_ros.gc.runtime.supervisor import SETTING_BOUNDS, SupervisorSettings
    from dvrk_ident_ros.sim.arm import FAULT_TRACKING_ERROR

    gc, defaults = SCHEMAS["gravity_compensation"], SupervisorSettings()
    for name in ("ramp_in_time", "fade_out_time", "stale_periods", "handover_after", "resume_after"):
        assert gc[name].default == getattr(defaults, name), name
    assert SCHEMAS["simulated_arm"]["fault_tracking_error"].default == FAULT_TRACKING_ERROR
    # the schema refuses exactly what the supervisor refuses, at and around each bound
    for name, (bound, _, _) in SETTING_BOUNDS.items():
        for value in (bound - 1e-9, bound, bound + 1e-9, bound + 5.0):
            try:
                gc[name].check(value)
                schema_accepts = True
            except ParameterValueError:
                schema_accepts = False
            try:
                SupervisorSettings(**{name: value})
                core_accepts = True
            except DvrkIdentError:
                core_accepts = False
            assert schema_accepts == core_accepts, (name, value, schema_accepts, core_accepts)


# -- on a running node: the parameter services that ros2 param describe / set call --------------------------------
def _call(probe, client, request, proc):
    future = client.call_async(request)
    assert probe.spin_until(future.done, 10.0, proc), "no answer from the node's parameter service"
    return future.result()


def _set(probe, client, proc, name: str, value):
    from rcl_interfaces.srv import SetParameters
    from rclpy.parameter import Parameter as RosParameter

    request = SetParameters.Request(parameters=[RosParameter(name, value=value).to_parameter_msg()])
    return _call(probe, client, request, proc).results[0]


@pytest.mark.ros
def test_describe_and_set_on_a_running_node(ros_env, rclpy_context, tmp_path):
    """gravity_compensation against a stand-in for a ready arm: describe gives each parameter's description,
    range and read-only flag; set refuses a wrong type, a value out of range (and at the open end of (0, 1])
    and a read-only parameter, each with the reason; torque_limit_scale 0.5 clamps the very next commands
    at half the file's limits, while the refused values changed nothing."""
    from rcl_interfaces.msg import ParameterType
    from rcl_interfaces.srv import DescribeParameters, SetParameters
    from test_nodes_gc import _gc_file, _gc_node, _Harness, _state

    from dvrk_ident_ros.gc.runtime.law import CompensationLaw

    path, params = _gc_file(tmp_path, spread=0.1)  # some torques beyond the file's limits (+-1 N m)
    rng = np.random.default_rng(3)
    q, qd = rng.uniform(-0.6, 0.6, (400, 7)), rng.uniform(-0.3, 0.3, (400, 7))
    unclamped = np.abs([CompensationLaw(params).compute(q[k], qd[k], 1.0) for k in range(400)])
    assert (unclamped >= 1.0).any() and ((unclamped > 0.55) & (unclamped < 1.0)).any()
    h = _Harness(rclpy_context, "gc_test_parameters")
    describe = h.probe.node.create_client(DescribeParameters, "/gravity_compensation/describe_parameters")
    set_parameters = h.probe.node.create_client(SetParameters, "/gravity_compensation/set_parameters")
    with running(_gc_node(path, "ramp_in_time:=0.0"), ros_env) as proc:
        h.wait_ready(proc)
        assert h.probe.spin_until(lambda: describe.service_is_ready() and set_parameters.service_is_ready(),
                                  10.0, proc), "no parameter services"
        names = ["torque_limit_scale", "ramp_in_time", "publish_diagnostics"]
        scale, ramp, diagnostics = _call(h.probe, describe, DescribeParameters.Request(names=names), proc).descriptors
        assert scale.type == ParameterType.PARAMETER_DOUBLE and not scale.read_only
        assert scale.description.startswith("Scale of the per-joint torque limits")
        assert (scale.floating_point_range[0].from_value, scale.floating_point_range[0].to_value) == (0.0, 1.0)
        assert scale.additional_constraints == "(0, 1]"
        assert ramp.read_only and ramp.description.endswith("[s]") and ramp.additional_constraints == ">= 0 s"
        assert diagnostics.type == ParameterType.PARAMETER_BOOL and not diagnostics.read_only

        refused = {"wrong type": _set(h.probe, set_parameters, proc, "publish_diagnostics", "banana"),
                   "out of range": _set(h.probe, set_parameters, proc, "torque_limit_scale", 1.5),
                   "open end": _set(h.probe, set_parameters, proc, "torque_limit_scale", 0.0),
                   "read-only": _set(h.probe, set_parameters, proc, "ramp_in_time", 2.0)}
        assert not any(r.successful for r in refused.values()), refused
        assert "type" in refused["wrong type"].reason.lower()
        assert "range" in refused["out of range"].reason.lower()
        assert refused["open end"].reason == "torque_limit_scale 0.0: expected (0, 1]"
        assert "read-only" in refused["read-only"].reason

        h.warm_up(proc, q[0], qd[0])
        h.stream([_state(k, q[k], qd[k]) for k in range(150)], rate=300.0)
        assert _set(h.probe, set_parameters, proc, "torque_limit_scale", 0.5).successful
        h.stream([_state(k, q[k], qd[k]) for k in range(150, 400)], rate=300.0)
        h.probe.spin_until(lambda: _stamp_keys(h) >= set(range(380, 400)), 10.0, proc)
        assert proc.poll() is None
    answers = {k: np.abs(m.effort) for k, m in _by_index(h).items()}
    h.close()
    before = np.array([answers[k] for k in range(150) if k in answers])
    after = np.array([answers[k] for k in range(160, 400) if k in answers])  # the set's answer came by then
    assert len(before) > 100 and len(after) > 200
    assert np.isclose(before.max(), 1.0) and before.max() <= 1.0 + 1e-9  # the file's limits, untouched
    assert after.max() <= 0.5 + 1e-9 and np.isclose(after.max(), 0.5)  # clamped at half at once


def _by_index(h) -> dict:
    """The node's answers to the test's samples, by sample index (the answer carries the sample's stamp)."""
    from test_nodes_gc import STAMP_BASE, STAMP_STEP, _stamp_key

    base = STAMP_BASE * 1_000_000_000
    return {(_stamp_key(m.header.stamp) - base) // STAMP_STEP: m for _, m in h.servo_jf
            if _stamp_key(m.header.stamp) >= base and (_stamp_key(m.header.stamp) - base) % STAMP_STEP == 0}


def _stamp_keys(h) -> set[int]:
    return set(_by_index(h))



def test_the_settings_classes_are_the_schemas_typed():
    """dvrk_ident_ros/parameters/settings.py (generated): one frozen class per node, a field per parameter, each
    value converted to its type once (1 for a double is 1.0, a list of numbers a tuple of floats)."""
    import dataclasses

    from dvrk_ident_ros.parameters.settings import SETTINGS

    assert set(SETTINGS) == set(SCHEMAS)
    for node, cls in SETTINGS.items():
        assert [f.name for f in dataclasses.fields(cls)] == [p.name for p in SCHEMAS[node]]
    values = dict(SCHEMAS["simulated_arm"].defaults()) | {"publish_rate": 200, "initial_position": [0, 1]}
    settings = SETTINGS["simulated_arm"].from_values(values)
    assert settings.publish_rate == 200.0 and isinstance(settings.publish_rate, float)
    assert settings.initial_position == (0.0, 1.0) and isinstance(settings.seed, int)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.arm = "MTML"


def test_no_node_casts_a_parameter_value():
    """The nodes read their parameters through the generated settings: no ``params["x"]`` and no float(),
    int(), str(), bool() or list() of a settings field in a node."""
    import ast

    offenders = []
    for path in sorted((REPO_ROOT / "dvrk_ident_ros" / "nodes").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Subscript) and getattr(node.value, "id", None) == "params":
                offenders.append(f"{path.name}:{node.lineno}: params[...]")
            if (isinstance(node, ast.Call) and getattr(node.func, "id", None) in ("float", "int", "str", "bool", "list")
                    and node.args and isinstance(node.args[0], ast.Attribute)
                    and getattr(node.args[0].value, "id", None) == "settings"):
                offenders.append(f"{path.name}:{node.lineno}: {node.func.id}(settings.{node.args[0].attr})")
    assert not offenders, offenders
