"""The console's own PSM/ECM gravity (gc/model/console_gc.py) against a transcription of what the console computes.

The transcription below follows cisst's robManipulator::RNE_MDH (cisstRobot, the recursion CCG_MDH calls with
zero velocities) link by link: a forward pass carrying the base's "up" acceleration into each link frame, a
backward pass summing forces and moments; with the prismatic joint's displacement in the moment arm (PStar),
as cisst's 2025 unit test (robManipulatorTest.cpp, the RP arm) requires. Then the console's joint maps
(mtsIntuitiveResearchKitPSM.cpp, ECM.cpp at 2.4). It shares no code with the package's regressor.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.gc.model.console_gc import (
    JOINT_MAPS,
    ChainLink,
    ConsoleChain,
    fit_moments,
    load_chain,
    mounting_pitch_of,
    parse_chain,
    up_vector,
)

CONFIG = Path(__file__).resolve().parents[1] / "config"


def _rot_x(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def _rot_z(a: float) -> np.ndarray:
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def _orientation(link: ChainLink, q: float) -> np.ndarray:
    theta = link.theta + (0.0 if link.prismatic else link.offset + q)
    return _rot_x(link.alpha) @ _rot_z(theta)


def _p_star(link: ChainLink, q: float) -> np.ndarray:
    d = link.d + (link.offset + q if link.prismatic else 0.0)
    return np.array([link.a, -d * math.sin(link.alpha), d * math.cos(link.alpha)])


def ccg_mdh(links: list[ChainLink], q: np.ndarray, up: np.ndarray) -> np.ndarray:
    """cisst RNE_MDH with qd = qdd = 0 and no external wrench: the static torques, one per link."""
    count = len(links)
    forces = []
    vd = np.array(up, dtype=float)
    for i in range(count):
        A = _orientation(links[i], q[i]).T
        vd = A @ vd  # w = wd = 0: the frame's acceleration is the carried "up"
        forces.append(links[i].mass * vd)
    f, n = np.zeros(3), np.zeros(3)
    tau = np.zeros(count)
    z0 = np.array([0.0, 0.0, 1.0])
    for i in range(count - 1, -1, -1):
        A, ps = np.eye(3), np.zeros(3)
        if i != count - 1:
            A, ps = _orientation(links[i + 1], q[i + 1]), _p_star(links[i + 1], q[i + 1])
        s = np.array(links[i].com)
        n = A @ n + np.cross(s, forces[i]) + np.cross(ps, A @ f)
        f = A @ f + forces[i]
        tau[i] = f @ z0 if links[i].prismatic else n @ z0
    return tau


def console_efforts(links: list[ChainLink], q_arm: np.ndarray, mounting_pitch: float) -> np.ndarray:
    """What GravityCompensationPSM / ECM::compute return for measured positions q_arm."""
    up = 9.81 * np.array([0.0, math.sin(mounting_pitch), math.cos(mounting_pitch)])
    j = q_arm
    if len(links) == 7:
        t = ccg_mdh(links, np.array([j[0], 0.0, j[1], -j[1], j[1], 0.5 * j[2], 0.5 * j[2]]), up)
        return np.array([t[0], t[2] - t[3] + t[4], t[6]])
    if len(links) == 6:
        t = ccg_mdh(links, np.array([j[0], 0.0, j[1], -j[1], j[1], j[2]]), up)
        return np.array([t[0], t[2] - t[3] + t[4], t[5], 0.0])
    return ccg_mdh(links, np.asarray(j[:4], dtype=float), up)


def test_the_transcription_gives_cisst_s_own_unit_test_values():
    """robManipulatorTest.cpp (2025): an RP arm, gravity along -y; vertical: the slider carries m g, no torque;
    horizontal and extended by 1 m: -(length + 1) m g on the hinge."""
    mass, g, length = 2.0, 9.81, 1.5
    rp = [ChainLink("r", 0.0, 0.0, 0.0, 0.0, mass=1.5),
          ChainLink("p", -math.pi / 2, 0.0, 0.0, length, prismatic=True, mass=mass)]
    tau = ccg_mdh(rp, np.array([0.0, 0.0]), np.array([0.0, g, 0.0]))
    assert tau == pytest.approx([0.0, mass * g], abs=1e-12)
    tau = ccg_mdh(rp, np.array([math.pi / 2, 1.0]), np.array([0.0, g, 0.0]))
    assert tau[0] == pytest.approx(-(length + 1) * mass * g, abs=1e-12)


def _random_masses(chain: ConsoleChain, rng: np.random.Generator) -> ConsoleChain:
    moments = np.concatenate([[m := rng.uniform(0.1, 3.0), *(m * rng.uniform(-0.2, 0.2, 3))]
                              for _ in chain.links])
    return chain.with_moments(moments)


@pytest.mark.parametrize("length", sorted(JOINT_MAPS))
def test_the_package_computes_what_the_console_computes(length: int):
    """Random masses and centres on the PSM's, the ECM Si's and the ECM Classic's chain shapes, random
    poses and mounting pitches: the package's vectorised torques equal the transcription to 1e-9."""
    rng = np.random.default_rng(length)
    geometry = {7: load_chain(CONFIG / "console_gc" / "psm.json").links,
                6: [ChainLink("yaw", math.pi / 2, 0, math.pi / 2, 0), ChainLink("iy", -math.pi / 2, -0.0712,
                    math.pi / 2, 0, active=False), ChainLink("p1", 0, 0.2913, -2.04193, 0),
                    ChainLink("p2", 0, 0.20313, 1.83474, 0), ChainLink("p3", 0, 0.346122, 0.207187, 0),
                    ChainLink("ins", -math.pi / 2, 0.0922, math.pi, -0.2012, prismatic=True)],
                4: [ChainLink("yaw", math.pi / 2, 0, 0, 0, offset=math.pi / 2),
                    ChainLink("pitch", -math.pi / 2, 0, 0, 0, offset=-math.pi / 2),
                    ChainLink("insertion", math.pi / 2, 0, 0, 0, prismatic=True, offset=-0.3822),
                    ChainLink("roll", 0, 0, 0, 0.3829)]}[length]
    chain = _random_masses(ConsoleChain(geometry), rng)
    q = np.column_stack([rng.uniform(-1.5, 1.5, (20, 2)), rng.uniform(0.0, 0.25, 20), rng.uniform(-1, 1, 20)])
    for pitch in (0.0, -math.pi / 4, -1.22173):
        ours = chain.torques(q, pitch)
        theirs = np.array([console_efforts(list(chain.links), row, pitch) for row in q])
        assert np.max(np.abs(ours - theirs)) <= 1e-9 * max(1.0, np.max(np.abs(theirs))), (ours - theirs)
        by_regressor = chain.regressor(q, pitch) @ chain.moments  # what the fit uses
        assert np.max(np.abs(by_regressor - theirs)) <= 1e-9 * max(1.0, np.max(np.abs(theirs)))


def _assert_frames_match(model_name: str, template: str, q: np.ndarray, pairs: tuple[tuple[int, str], ...],
                         position: float, rotation: float) -> None:
    """The template's chain links ``pairs[i][0]`` have the frames of the description's ``pairs[i][1]`` at q."""
    from dvrk_ident_ros.model.arm_model import load_model

    model = load_model(model_name)
    names = [frame.name for frame in model.description.frames]
    chain = load_chain(CONFIG / "console_gc" / template)
    T = model.forward_kinematics(model.motor_from_dvrk(q))
    R, p = chain.frames(q[:, :chain.map.to_chain.shape[1]] @ chain.map.to_chain.T)
    for link, frame in pairs:
        k = names.index(frame)
        assert np.max(np.abs(T[:, k, :3, 3] - p[:, link])) < position, frame
        assert np.max(np.abs(T[:, k, :3, :3] - R[:, link])) < rotation, frame


def test_the_classic_psm_template_has_the_description_s_geometry():

    """config/console_gc/psm.json folds config/psm.yaml's parallelogram into the console's 7 links: its
    yaw, pitch3 and insertion frames are the description's frames 1, 2'''' and 3, at any pose."""
    from dvrk_ident_ros.model.arm_model import load_model

    rng = np.random.default_rng(3)
    q = np.column_stack([rng.uniform(-1.4, 1.4, 30), rng.uniform(-0.7, 0.8, 30), rng.uniform(0.07, 0.23, 30),
                         rng.uniform(-1.0, 1.0, (30, 4))])
    _assert_frames_match("psm", "psm.json", q, ((0, "1"), (4, "2''''"), (6, "3")), 1e-12, 1e-12)
    assert mounting_pitch_of(load_model("psm").description.gravity) == 0.0  # a Classic PSM's default pitch


def test_fitted_masses_reproduce_the_simulated_psm_s_gravity():
    """The simulated PSM's true gravity (its description's bodies behind joints 1-3, the tool's included)
    fitted onto the template: the fitted chain, through the transcription, within 0.1 mN m (mN) of the truth
    at poses not fitted; every link the template gives a mass keeps a positive one, the massless stay so."""
    from dvrk_ident_ros.sim.config import load_sim_config

    config = load_sim_config("psm")
    model = config.model
    rng = np.random.default_rng(5)

    def poses(n: int) -> np.ndarray:
        return np.column_stack([rng.uniform(-1.45, 1.45, n), rng.uniform(-0.75, 0.8, n),
                                rng.uniform(0.07, 0.235, n), rng.uniform(-1.4, 1.4, (n, 4))])

    def gravity(q: np.ndarray) -> np.ndarray:
        return model.gravity(model.motor_from_dvrk(q), config.delta) @ model.A_inv

    q_fit, q_check = poses(300), poses(100)
    fit = fit_moments(load_chain(CONFIG / "console_gc" / "psm.json"), q_fit, gravity(q_fit), q_check,
                      gravity(q_check), 0.0)
    console = np.array([console_efforts(list(fit.chain.links), row, 0.0) for row in q_check])
    error = console - gravity(q_check)[:, :3]
    assert np.max(np.abs(error)) < 1e-4, np.max(np.abs(error), axis=0)
    assert np.sqrt(np.mean(error ** 2, axis=0)) == pytest.approx(fit.rms, rel=1e-6, abs=1e-12)
    template = load_chain(CONFIG / "console_gc" / "psm.json")
    for link, fitted in zip(template.links, fit.chain.links, strict=True):
        assert (fitted.mass > 0) == (link.mass > 0), (link.name, fitted.mass)
        assert np.linalg.norm(fitted.com) <= 1.0 + 1e-6, (link.name, fitted.com)


def test_a_written_file_reads_back_and_the_dvrk_s_comments_are_accepted(tmp_path: Path):
    chain = _random_masses(load_chain(CONFIG / "console_gc" / "psm.json"), np.random.default_rng(9))
    path = tmp_path / "PSM1-gc.json"
    path.write_text(json.dumps(chain.document("test")))
    again = load_chain(path)
    assert np.allclose(again.moments, chain.moments, rtol=1e-12, atol=1e-15)
    commented = tmp_path / "shipped.json"
    commented.write_text('/* -*- Mode: Javascript -*- */\n{\n // a comment "with quotes"\n "DH": {"convention": '
                         '"modified", "links": [' + ", ".join(
                             json.dumps(e) for e in chain.document()["DH"]["joints"]) + "] // end\n}}\n")
    assert np.allclose(load_chain(commented).moments, chain.moments)


@pytest.mark.parametrize("document, message", [
    ({}, 'no "DH" object'),
    ({"DH": {"convention": "standard", "links": []}}, "modified DH"),
    ({"DH": {"convention": "modified", "links": [{"alpha": 0}] * 5}}, "not 5"),
    ({"DH": {"convention": "modified", "links": [{"mass": -1}] * 4}}, "the mass >= 0"),
    ({"DH": {"convention": "modified", "links": [{"type": "ball"}] * 4}}, "revolute or prismatic"),
])
def test_a_bad_chain_is_refused_with_the_reason(document, message):
    with pytest.raises(DataError, match=message):
        parse_chain(document)


def test_an_unreadable_chain_file_is_one_clear_error(tmp_path: Path):
    with pytest.raises(DataError, match="cannot read"):
        load_chain(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(DataError, match="not JSON"):
        load_chain(tmp_path / "bad.json")


def test_up_vector_and_pitch_agree():
    for pitch in (0.0, -0.785398, -1.22173, 0.3):
        assert mounting_pitch_of(-up_vector(pitch)) == pytest.approx(pitch, abs=1e-12)
    with pytest.raises(DataError, match="x component"):
        mounting_pitch_of(np.array([1.0, 0.0, -9.81]))


def _truth_chain() -> ConsoleChain:
    """The template fitted to the simulated PSM's true gravity (as close to exact as the chain gets)."""
    from dvrk_ident_ros.sim.config import load_sim_config

    config = load_sim_config("psm")
    model = config.model
    rng = np.random.default_rng(8)
    q = np.column_stack([rng.uniform(-1.45, 1.45, 300), rng.uniform(-0.75, 0.8, 300),
                         rng.uniform(0.07, 0.235, 300), rng.uniform(-1.4, 1.4, (300, 4))])
    g = model.gravity(model.motor_from_dvrk(q), config.delta) @ model.A_inv
    return fit_moments(load_chain(CONFIG / "console_gc" / "psm.json"), q, g, q, g, 0.0).chain


def test_the_simulated_psm_applies_the_file_as_the_console_does():
    """dVRK 2.4 with kinematic_gc: the compensation is on at start, its reading is the chain's torques at the
    measured joints (the transcription's), use_gravity_compensation(false) turns it off; under the dVRK's PID
    (no integral term) a held pose sags without it and stays put with it. dVRK 2.3 has no such input."""
    from dvrk_ident_ros.errors import DvrkIdentError
    from dvrk_ident_ros.sim.arm import SimulatedArm
    from dvrk_ident_ros.sim.config import load_sim_config

    config = load_sim_config("psm")
    chain = _truth_chain()
    goal = np.array([0.5, 0.4, 0.2, 0.3, -0.2, 0.1, 0.5])
    errors = {}
    for label, used in (("none", None), ("file", chain)):
        arm = SimulatedArm(config, "PSM1", noise=False, kinematic_gc=used)
        assert arm.builtin_gravity_compensation is (used is not None)
        arm.advance(arm.move_jp(goal) + 2.0)
        errors[label] = np.abs(arm.q[:3] - goal[:3])
        if used is not None:
            reading = arm.builtin_compensation_effort()
            assert reading[:3] == pytest.approx(console_efforts(list(chain.links), arm.q, 0.0), abs=1e-3)
            assert not np.any(reading[3:])
            arm.use_gravity_compensation(False)
            assert not np.any(arm.builtin_compensation_effort())
    assert np.all(errors["none"] > 1e-5), errors  # it sags: gravity over the PID's P gain
    assert np.all(errors["file"] < errors["none"] / 50), errors
    with pytest.raises(DvrkIdentError, match=r"2\.4"):
        SimulatedArm(config, "PSM1", dvrk_version="2.3", kinematic_gc=chain)


def test_the_export_fits_writes_and_refuses_with_the_reason(tmp_path: Path):
    """`dvrk-ident export kinematic-gc`'s core on the simulated PSM's true parameter file: written, it loads
    and holds the file's gravity within the printed residual; held to the holds' noise when the file has a
    refit, refused (nothing written) when the chain cannot meet it; refused for an arm with no console chain
    and for a file without a noise figure."""
    from dataclasses import replace

    from dvrk_ident_ros.export.kinematic_gc import kinematic_gc_export, write_kinematic_gc
    from dvrk_ident_ros.identify.results import IdentificationResult
    from dvrk_ident_ros.sim.config import load_sim_config

    params = load_sim_config("psm").parameter_file
    with pytest.raises(DataError, match="no static-hold refit"):
        kinematic_gc_export(params)
    export = kinematic_gc_export(params, max_residual=[0.001])
    assert np.all(export.rms < 1e-4) and np.all(export.gravity_rms > 0.1), export.summary()
    out = write_kinematic_gc(export, tmp_path / "PSM1-gc.json")
    chain = load_chain(out)
    assert len(chain.links) == 7 and export.mounting_pitch == 0.0
    result = IdentificationResult.load(params)
    refitted = tmp_path / "refit.json"
    replace(result, gravity_refit={"holds": 12, "residual_rms_after": [1e-9] * 7}).save(refitted)
    with pytest.raises(DataError, match=r"cannot hold .*the RMS residual of its 12 static holds.*nothing written"):
        kinematic_gc_export(refitted)
    mtm = load_sim_config("mtm").parameter_file
    with pytest.raises(DataError, match=r"no physical-DH gravity .* for the MTM"):
        kinematic_gc_export(mtm, max_residual=[1.0])


def test_the_command_line_writes_the_console_file(tmp_path: Path):
    import subprocess
    import sys

    from dvrk_ident_ros.sim.config import load_sim_config

    params = load_sim_config("psm").parameter_file
    out = tmp_path / "PSM1-gc.json"
    proc = subprocess.run([sys.executable, "-m", "dvrk_ident_ros.app.cli", "export", "kinematic-gc", "--params",
                           str(params), "--out", str(out), "--max-residual", "0.001"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert '"kinematic_gc": "' in proc.stdout and '"mounting_pitch": 0.000000' in proc.stdout
    assert len(load_chain(out).links) == 7
    proc = subprocess.run([sys.executable, "-m", "dvrk_ident_ros.app.cli", "export", "kinematic-gc", "--params",
                           str(params), "--out", str(tmp_path / "no.json")], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 2 and "no static-hold refit" in proc.stderr and not (tmp_path / "no.json").exists()


def test_the_psm_si_description_is_the_console_s_own_chain():
    """config/psm_si.yaml's joints 1-3 are the console's default PSM Si chain (config/console_gc/psm_si.json,
    the numbers of PSM_Si_physical.json): frames 1, 2, 2', 2'' and 3 are its yaw, pitch1-3 and insertion2
    frames (to 4e-6 rad and 1 um: the file's theta 3.14159625 where the description has pi), and its gravity is the
    console's for the mounting pitch -45 deg."""
    from dvrk_ident_ros.model.arm_model import load_model

    rng = np.random.default_rng(4)
    q = np.column_stack([rng.uniform(-1.4, 1.4, 30), rng.uniform(-1.2, 1.2, 30), rng.uniform(0.02, 0.27, 30),
                         rng.uniform(-1.0, 1.0, (30, 4))])
    _assert_frames_match("psm_si", "psm_si.json", q, ((0, "1"), (2, "2"), (3, "2'"), (4, "2''"), (6, "3")), 1e-6,
                         4e-6)
    assert mounting_pitch_of(load_model("psm_si").description.gravity) == pytest.approx(-math.pi / 4, abs=1e-6)


def test_the_ecm_si_description_is_the_console_s_own_chain_and_its_endoscope_mass_stays():
    """config/ecm_si.yaml's joints 1-3 are the console's default ECM Si chain (frames 1, 2, 2', 2'' and 3 are
    its yaw, pitch1-3 and insertion frames; gravity for the mounting pitch -70 deg); a fit keeps the
    insertion link's mass, which the console replaces by its endoscope's, and reproduces the simulated ECM
    Si's true gravity through the transcription (roll effort 0, as the console gives)."""
    from dvrk_ident_ros.model.arm_model import load_model
    from dvrk_ident_ros.sim.config import load_sim_config

    model = load_model("ecm_si")
    template = load_chain(CONFIG / "console_gc" / "ecm_si.json")
    rng = np.random.default_rng(6)
    q = np.column_stack([rng.uniform(-1.4, 1.4, 200), rng.uniform(-1.0, 0.95, 200), rng.uniform(0.01, 0.24, 200),
                         rng.uniform(-1.4, 1.4, 200)])
    _assert_frames_match("ecm_si", "ecm_si.json", q, ((0, "1"), (2, "2"), (3, "2'"), (4, "2''"), (5, "3")), 1e-6,
                         4e-6)
    pitch = mounting_pitch_of(model.description.gravity)
    assert pitch == pytest.approx(math.radians(-70.0), abs=1e-6)
    config = load_sim_config("ecm_si")
    gravity = model.gravity(model.motor_from_dvrk(q), config.delta) @ model.A_inv
    fit = fit_moments(template, q[:100], gravity[:100], q[100:], gravity[100:], pitch)
    assert fit.chain.links[5].mass == template.links[5].mass == 1.8
    assert fit.reachable.tolist() == [True, True, True, False]  # the console's map gives the roll 0
    console = np.array([console_efforts(list(fit.chain.links), row, pitch) for row in q[100:]])
    assert np.all(console[:, 3] == 0.0)
    error = console[:, :3] - gravity[100:, :3]
    assert np.sqrt(np.mean(error ** 2, axis=0)) == pytest.approx(fit.rms[:3], rel=1e-6, abs=1e-12)
    # the endoscope's true mass is not the console's 1.8 kg: only its centre moves; what is left is printed
    print(f"ECM Si chain residual RMS (N m, N): {fit.rms}")


def test_the_classic_ecm_description_is_the_console_s_chain_and_the_file_holds_its_truth():
    """config/ecm_classic.yaml is ECM.json's chain (the console's default Classic chain, 4 links: frames 1-4 at
    any pose, gravity for the mounting pitch -45 deg); the console's default carries only the endoscope's 1.5 kg; a fit
    keeps that mass and reproduces the simulated Classic ECM's true gravity through the transcription (the
    console passes the measured joints, roll included, straight to CCG)."""
    from dvrk_ident_ros.model.arm_model import load_model
    from dvrk_ident_ros.sim.config import load_sim_config

    model = load_model("ecm_classic")
    rng = np.random.default_rng(9)
    q = np.column_stack([rng.uniform(-1.4, 1.4, 200), rng.uniform(-0.7, 1.05, 200), rng.uniform(0.01, 0.24, 200),
                         rng.uniform(-1.4, 1.4, 200)])
    _assert_frames_match("ecm_classic", "ecm_classic.json", q, ((0, "1"), (1, "2"), (2, "3"), (3, "4")), 1e-9, 1e-9)
    pitch = mounting_pitch_of(model.description.gravity)
    assert pitch == pytest.approx(-math.pi / 4, abs=1e-6)
    default = load_chain(CONFIG / "console_gc" / "ecm_classic_default.json")
    assert [link.mass for link in default.links] == [0.0, 0.0, 1.5, 0.0]
    template = load_chain(CONFIG / "console_gc" / "ecm_classic.json")
    gravity = model.gravity(model.motor_from_dvrk(q), load_sim_config("ecm_classic").delta) @ model.A_inv
    fit = fit_moments(template, q[:100], gravity[:100], q[100:], gravity[100:], pitch)
    assert fit.chain.links[2].mass == 1.5
    assert fit.reachable.tolist() == [True, True, True, False]  # no link with mass turns with the roll
    console = np.array([console_efforts(list(fit.chain.links), row, pitch) for row in q[100:]])
    assert np.max(np.abs(console - gravity[100:])) < 1e-5, np.max(np.abs(console - gravity[100:]), axis=0)


@pytest.mark.ros
def test_the_simulated_si_psm_reports_the_console_s_compensation_and_turns_it_off(ros_env, rclpy_context):
    """simulated_arm PSM1 with DVRK_IDENT_GENERATION=si: the console's own default file applies (as the console
    loads PSM_Si_physical.json): /PSM1/gravity_compensation/setpoint_js carries the chain's torques at the
    measured joints (the transcription's), zero beyond joint 3; use_gravity_compensation false zeroes it."""
    import sys

    from helpers.processes import output_of, running
    from helpers.ros_probe import Probe
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Bool

    env = {**ros_env, "DVRK_IDENT_GENERATION": "si"}
    chain = load_chain(CONFIG / "console_gc" / "psm_si.json")
    probe = Probe(rclpy_context, "console_gc_probe")
    readings = probe.collect(JointState, "/PSM1/gravity_compensation/setpoint_js")
    measured = probe.collect(JointState, "/PSM1/measured_js")
    flag = probe.node.create_publisher(Bool, "/PSM1/use_gravity_compensation", 10)
    sim = [sys.executable, "-m", "dvrk_ident_ros.nodes.simulated_arm", "--ros-args", "-p", "arm:=PSM1",
           "-p", "initial_state:=HOMED", "-p", "noise:=false"]
    try:
        with running(sim, env) as proc:
            assert probe.spin_until(lambda: len(readings) > 20 and measured, 20.0, proc), output_of(proc)
            q = np.array(measured[-1][1].position)
            effort = np.array(readings[-1][1].effort)
            assert probe.wait_for_graph(proc, subscribers=[flag]), output_of(proc)
            flag.publish(Bool(data=False))
            assert probe.spin_until(lambda: not any(readings[-1][1].effort), 5.0, proc), output_of(proc)
            out = output_of(proc) if proc.poll() is not None else ""
    finally:
        probe.close()
    assert effort[:3] == pytest.approx(console_efforts(list(chain.links), q, -math.pi / 4), abs=2e-3), out
    assert not np.any(effort[3:]) and np.any(effort[:3])
