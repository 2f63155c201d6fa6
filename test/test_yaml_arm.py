"""An arm that exists only as YAML files (test/arms/) goes through the whole package with no code change.

test/arms/planar.yaml: a two-joint planar arm in a vertical plane whose elbow is driven through a
parallelogram (a closed chain opened into a tree, and a coupled motor-to-joint matrix: elbow = m2 - m1),
with its ``dvrk:`` registry section; planar_sim.yaml and planar_true.json: its simulator and "true"
parameters (chosen by hand: masses 1.2, 0.8, 0.3, 0.2 kg; 14 base parameters); planar_fourier.yaml: its
excitation (`dvrk-ident trajectory optimize --arm planar --harmonics 5 --starts 8 --seed 1`, condition
number 9.3, two 4 s periods). The package finds them through DVRK_IDENT_ARM_PATH.

What limits exactness on noise-free data: the identification differentiates the recorded positions
twice after a zero-phase low-pass at 3.75 Hz (the description's ``identification.cutoff_hz``), the
simulator integrates at 1.5 kHz (semi-implicit Euler) with a Coulomb friction smoothed over 2 mrad/s and
its friction offset acting only while a joint slides; through the nodes the states are sampled at
200 Hz. The figures (measured on the shared 2-core machine):

- core (simulate_tracking at 300 Hz, SDP): the gravity base parameters within 2 % of the truth
  (l1''x + l1x + 0.3 m2: 0.4504 for 0.4500; l2x + 0.2 l1x + 0.06 m2: 0.1820 for 0.1800;
  l1'x + ...: 0.1071 for 0.1050), the inertia L1zz + 0.09 m2 + L1''zz 0.1142 for 0.1141, viscous friction
  within 10 %; the gravity torques within 1 % of the largest at every pose of a grid over the limits;
- nodes (simulated PLANAR1 -> trajectory_player -> recorder -> /identify sdp -> gravity_compensation from
  the identified file): see the figures printed by test_planar_arm_through_the_nodes and the tolerances
  asserted there.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

ARMS = Path(__file__).resolve().parent / "arms"
ARM = "PLANAR1"
#: base parameters whose magnitude is above this are compared one by one (the others are near zero)
LARGE = 0.05


@pytest.fixture
def planar_path(monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("DVRK_IDENT_ARM_PATH", str(ARMS))
    return ARMS


def _gravity_grid(model, n: int = 7) -> np.ndarray:
    """Motor positions over the arm's limits (dVRK grid: shoulder x elbow)."""
    limits = model.description.limits_for()
    shoulder = np.linspace(*limits["q1"][:2], n)
    elbow = np.linspace(*limits["qd2"][:2], n)
    q = np.array([[a, b] for a in shoulder for b in elbow])
    return model.motor_from_dvrk(q)


def _gravity_error(model, delta: np.ndarray, truth: np.ndarray) -> tuple[float, float]:
    """Largest |g(q) - g_true(q)| over the grid (N m, motor torques), and the largest |g_true|."""
    q = _gravity_grid(model)
    g, g_true = model.gravity(q, delta), model.gravity(q, truth)
    return float(np.max(np.abs(g - g_true))), float(np.max(np.abs(g_true)))


def test_registry_reads_the_yaml_only_arm(planar_path):
    from dvrk_ident_ros.arm.registry import arm_spec, canonical_arm, known_arms
    from dvrk_ident_ros.errors import DvrkIdentError
    from dvrk_ident_ros.nodes.recorder import recorded_topics

    assert known_arms()[-1] == ARM and canonical_arm("planar1") == ARM
    spec = arm_spec("planar1")
    assert (spec.family, spec.model, spec.dof, spec.arm_joints, spec.jaw) == ("PLANAR", "planar", 2, 2, None)
    assert spec.simulation == ARMS / "planar_sim.yaml" and spec.trajectory == ARMS / "planar_fourier.yaml"
    assert spec.estimators == ("sdp", "wls", "ols") and not spec.gc_fits
    assert sorted(recorded_topics(ARM)) == sorted(["/PLANAR1/measured_js", "/PLANAR1/setpoint_js",
                                                   "/PLANAR1/operating_state", "/dvrk_ident/PLANAR1/player_status"])
    assert sorted(recorded_topics("PSM1", operating_state=False))[:2] == ["/PSM1/jaw/measured_js",
                                                                          "/PSM1/jaw/setpoint_js"]
    with pytest.raises(DvrkIdentError, match="expected one of ECM, MTML, MTMR, PSM1, PSM2, PSM3, PLANAR1"):
        canonical_arm("planar2")


def test_unknown_arm_without_the_path(monkeypatch):
    from dvrk_ident_ros.arm.registry import arm_spec
    from dvrk_ident_ros.errors import DvrkIdentError

    monkeypatch.delenv("DVRK_IDENT_ARM_PATH", raising=False)
    with pytest.raises(DvrkIdentError, match=r"unknown arm 'planar1'.*DVRK_IDENT_ARM_PATH"):
        arm_spec("planar1")


def test_planar_arm_identified_from_simulated_tracking(planar_path):
    """Core, no ROS: the simulator tracks the arm's excitation noise-free; the SDP recovers the truth."""
    from dvrk_ident_ros.excitation.files import load_trajectory
    from dvrk_ident_ros.identify.pipeline import identify
    from dvrk_ident_ros.sim.config import load_sim_config
    from dvrk_ident_ros.sim.physics import ArmPhysics
    from dvrk_ident_ros.sim.run import simulate_tracking
    from dvrk_ident_ros.sim.servo import PidServo

    config = load_sim_config(ARM)
    model = config.model
    traj, meta = load_trajectory(config.spec.trajectory, arm=config.family, joints=model.dof)
    physics = ArmPhysics(model, config.delta, coulomb_velocity=config.coulomb_velocity)
    data = simulate_tracking(physics, PidServo(config.gains, model.dof), traj, meta["periods"] * traj.period,
                             record_every=5, noise=None)
    result = identify(model, [data], "sdp")
    assert result.solver["status"] == "optimal"
    truth = model.base.from_standard(config.delta)
    large = np.abs(truth) > LARGE
    relative = np.abs(result.base - truth)[large] / np.abs(truth[large])
    print("base parameters (identified, true):\n" + "\n".join(
        f"  {n:40s} {a:+.5f} {b:+.5f}" for n, a, b in zip(model.base_parameter_names, result.base, truth,
                                                            strict=True)))
    assert relative.max() < 0.03, relative  # measured: 1.8 % at most (l1'x + ..., 0.1071 for 0.1050)
    assert np.max(np.abs(result.base - truth)) < 0.005  # measured: 0.0036 (Fv1')
    error, largest = _gravity_error(model, np.array([result.standard[n] for n in model.parameter_names]),
                                    config.delta)
    print(f"gravity torques: largest error {error:.4f} N m of {largest:.3f} N m")
    assert error < 0.02 * largest  # measured: under 1 %
    assert max(result.errors["training"]) < 0.03  # measured: 0.3 % (shoulder), 1.5 % (elbow)


@pytest.mark.ros
@pytest.mark.slow
def test_planar_arm_through_the_nodes(planar_path, ros_env, tmp_path: Path):
    """simulated PLANAR1 -> player (home_arm, the registry's trajectory) -> recorder -> /identify (sdp) ->
    gravity_compensation from the identified file on the simulated arm (its torques against the true gravity); nothing
    but YAML describes it."""
    from dvrk_ident_ros.gc.runtime.model_law import ModelCompensation
    from dvrk_ident_ros.identify.results import IdentificationResult
    from dvrk_ident_ros.jobs.launch_plans import default_trajectory
    from dvrk_ident_ros.jobs.launcher import NodeProcess, ros_environment, wait_for
    from dvrk_ident_ros.ros.clients import ArmClient
    from dvrk_ident_ros.sim.config import load_sim_config

    env = ros_environment(int(ros_env["ROS_DOMAIN_ID"]))
    assert env["DVRK_IDENT_ARM_PATH"] == str(ARMS)
    config = load_sim_config(ARM)
    model = config.model
    logs, bag = tmp_path / "logs", tmp_path / "bag"
    # the identification's exactness against a known truth: the stream replayed as stamped (servo_timing stamp);
    # held as the dVRK holds it (arrival), a 200 Hz stream's steps left the inertia 29 % off (measured)
    with NodeProcess("simulated_arm", {"arm": "planar1", "publish_clock": True, "real_time_factor": 0.5,
                                       "publish_rate": 1000.0, "clock_rate": 1000.0, "noise": False,
                                       "homing_time": 0.5, "servo_timing": "stamp"},
                     log_dir=logs, env=env, name="sim") as sim, ArmClient(ARM, "test_planar") as client:
        with NodeProcess("recorder", {"arm": ARM, "bag_path": str(bag), "use_sim_time": True,
                                      "expect_player": True}, log_dir=logs, env=env):
            play = NodeProcess("trajectory_player", {"arm": ARM, "trajectory_file": default_trajectory(ARM),
                                                     "autostart": True, "home_arm": True, "use_sim_time": True,
                                                     "stream_rate": 200.0}, log_dir=logs, env=env)
            code = play.wait(90)
            play.stop()
        assert code == 0, play.tail(10)
        recorder_log = (logs / "recorder.log").read_text()
        assert f"bag complete: the {ARM} player completed 1 run(s): {bag}" in recorder_log, recorder_log[-2000:]

        with NodeProcess("identification_service", {"output_directory": str(tmp_path)}, log_dir=logs, env=env):
            r = client.identify(arm="planar1", method="sdp", data_files=[str(bag)], data_format="bag",
                                output_directory="")
        assert r.success, r.message
        assert r.solver_status == "optimal"
        result = IdentificationResult.load(r.result_file)
        assert result.arm == "planar"
        truth = model.base.from_standard(config.delta)
        identified = np.asarray(result.base_values)
        large = np.abs(truth) > LARGE
        relative = np.abs(identified - truth)[large] / np.abs(truth[large])
        delta = np.array([result.standard[n] for n in model.parameter_names])
        error, largest = _gravity_error(model, delta, config.delta)
        print(f"through the nodes: relative torque errors {np.round(r.relative_error, 4).tolist()}; largest base "
              f"parameter error {relative.max():.2%}; gravity torques within {error:.4f} N m of {largest:.3f} N m\n"
              + "\n".join(f"  {n:40s} {a:+.5f} {b:+.5f}" for n, a, b in zip(model.base_parameter_names, identified,
                                                                              truth, strict=True)))
        assert max(r.relative_error) < 0.1, r.relative_error  # measured: 1.2 %, 4.3 %
        assert relative.max() < 0.15, relative  # measured: 7 % (the inertia), 4 % at most for the gravity ones
        # measured: 0.02-0.134 N m of 4.4 N m (0.5-3.0 %) over ten runs on a loaded 2-core machine (CI's quieter one:
        # about 0.025), the spread from the /clock pipeline's timing, not the fit (the same arm tracked in-process:
        # under 1 %, the test above); a gravity model gone wrong is off by tens of percent
        assert error < 0.04 * largest

        # gravity compensation from the identified model holds the arm where it was left
        goal = np.array([0.3, 1.2])
        client.move_jp(goal)
        wait_for(lambda: np.max(np.abs(client.position() - goal)) < 0.01, 30.0, "the pose")
        time.sleep(0.3)
        client.recording = True
        with NodeProcess("gravity_compensation", {"arm": ARM, "parameter_file": r.result_file,
                                                  "ramp_in_time": 0.0},
                         log_dir=logs, env=env) as gc:
            wait_for(lambda: client.first_effort_stamp is not None, 30.0, "servo_jf")
            t0 = client.first_effort_stamp
            wait_for(lambda: client.recorded_until() >= t0 + 2.0, 30.0, "2 s of simulated time")
            assert gc.running, gc.tail(10)
            assert client.last_effort is not None
            stamp, effort = client.last_effort
        client.recording = False
        drift = np.abs(client.position_at(t0 + 2.0) - client.position_at(t0))
        assert sim.running, sim.tail(10)
    # what the node sent, against the true gravity at the pose it answered (the same law with the true parameters)
    held = client.position_at(stamp)
    true_torque = np.array(ModelCompensation(model, config.delta, np.full(model.dof, 1e3)).compute(held, None))
    print(f"compensation at {np.round(held, 3)} rad: {np.round(effort, 4)} N m, true gravity {np.round(true_torque, 4)}"
          f" N m; joint drift over 2 s: {np.round(1e3 * drift, 2)} mrad")
    # the node sent its file's law at the pose it answered (the law as the node loads it), and that law is within
    # the bound the identification was held to above: 4 % of the largest gravity torque, in motor torques (the
    # gravity residue through the nodes is 0.5-3 %; at one pose it reached 0.076 N m of 2.5 N m once)
    from dvrk_ident_ros.arm.registry import arm_spec
    from dvrk_ident_ros.gc.runtime.model_law import load_model_compensation

    identified = np.array(load_model_compensation(Path(r.result_file), arm_spec(ARM)).compute(held, None))
    print(f"the file's law at that pose: {np.round(identified, 4)} N m")
    assert np.max(np.abs(effort - identified)) < 1e-3, (effort, identified)
    gap = model.motor_torque_from_dvrk(np.asarray(effort) - true_torque)
    assert np.max(np.abs(gap)) < 0.04 * largest, (effort, true_torque, largest)
    # The drift is printed, not asserted: this test arm's Coulomb friction (0.02-0.03 N m, smoothed over 2 mrad/s:
    # no stiction) is below the identification's gravity residue (0.02-0.09 N m through the nodes), so the arm
    # creeps or slides under any compensation within that residue (measured 20 mrad to 1 rad over 2 s). What the
    # compensation is worth is the torque check above, at the pose it answered.
