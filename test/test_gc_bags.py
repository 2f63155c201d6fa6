"""Pose-grid bags as the player and recorder write them load into averaged poses: positions from
measured_js, efforts from setpoint_js (commanded, Lin 2019) or measured_js; stamp-0 samples and samples
while the arm was not ready are never data."""
from __future__ import annotations

import numpy as np
import pytest
import yaml
from helpers.bags import header, player_status, write_events

from dvrk_ident_ros.app import cli
from dvrk_ident_ros.arm.player_phase import PlayerPhase
from dvrk_ident_ros.data.interfaces import JOINT_STATE, OPERATING_STATE, PLAYER_STATUS, typestore
from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.excitation.files import save_grid
from dvrk_ident_ros.gc.fitting.data import PoseData
from dvrk_ident_ros.gc.fitting.loaders import load_poses
from dvrk_ident_ros.gc.fitting.mlse import fit_mlse
from dvrk_ident_ros.gc.model.params import load_gc
from dvrk_ident_ros.gc.model.regressor import torques


def _load_all(path, **kwargs):
    """Every pose (these tests count them): no sweep's first pose left out."""
    return load_poses(path, trim=(0, 0), **kwargs)


def _grid(tmp_path):
    sweeps = []
    for joint, aux in ((6, 0.3), (6, -0.3)):
        for direction in ("positive", "negative"):
            poses = np.zeros((4, 7))
            poses[:, joint - 1] = np.linspace(-0.5, 0.5, 4)[:: 1 if direction == "positive" else -1]
            poses[:, 4] = aux
            sweeps.append({"estimated_joint": joint, "auxiliary_joint": 5, "auxiliary_value": aux,
                           "direction": direction, "poses": poses.tolist()})
    return save_grid(tmp_path / "grid.yaml", {"arm": "MTML", "coordinates": "dvrk", "units": "rad",
                                              "settle_time": 0.1, "samples_per_pose": 5, "sweeps": sweeps})


def _poses(grid_path):
    return np.array([p for s in yaml.safe_load(grid_path.read_text())["sweeps"] for p in s["poses"]])


def _write_bag(path, grid_path, poses, setpoint=None, measured=None, skip_pose=None, invalid=(), states=None,
               samples=5, legacy=False, other_player=None):
    """A pose-grid bag as the recorder writes it (log time = header time). Efforts: ``setpoint(index, q)`` on
    /MTML/setpoint_js (None: no such topic), ``measured(index, q)`` on /MTML/measured_js (default
    0.1 sin q). Sample k of a pose in ``invalid`` is sent as the dVRK sends one when not ready: zeros,
    stamp 0. ``states``: [(time, state, is_homed)] on /MTML/operating_state. The player's status on its
    per-arm topic, or with ``legacy`` on the global /dvrk_ident/player_status (bags recorded before the
    per-arm topics). ``other_player`` (arm, pose index): that arm's player reports SAMPLING for that pose
    while the MTML moves to each pose (on its own topic, or the global one with ``legacy``)."""
    store = typestore()
    JointState = store.types[JOINT_STATE]
    measured = measured or (lambda index, q: 0.1 * np.sin(q))

    def status_topic(arm):
        return "/dvrk_ident/player_status" if legacy else f"/dvrk_ident/{arm}/player_status"

    events = []  # (time, topic, msgtype, message)
    t = 10.0
    for index, q in enumerate(poses):
        for phase, count in ((PlayerPhase.MOVING, 3), (PlayerPhase.SAMPLING, samples)):
            events.append((t, status_topic("MTML"), PLAYER_STATUS, player_status(
                t, "MTML", phase, str(grid_path), pose_index=index, pose_count=len(poses), direction=1)))
            if other_player and phase == PlayerPhase.MOVING:
                arm, pose = other_player
                events.append((t, status_topic(arm), PLAYER_STATUS, player_status(
                    t, arm, PlayerPhase.SAMPLING, str(grid_path), pose_index=pose, pose_count=len(poses), direction=1)))
            for k in range(count):
                t += 0.01
                if phase == PlayerPhase.SAMPLING and index == skip_pose:
                    continue
                zero = phase == PlayerPhase.SAMPLING and k in invalid
                for topic, effort in (("/MTML/measured_js", measured), ("/MTML/setpoint_js", setpoint)):
                    if effort is None:
                        continue
                    js = JointState(header=header(0.0 if zero else t), name=[f"j{i}" for i in range(7)],
                                    position=q * (not zero), velocity=np.zeros(7),
                                    effort=np.asarray(effort(index, q), float) * (not zero))
                    events.append((t + (0.001 if "setpoint" in topic else 0.0), topic, JOINT_STATE, js))
    if states is not None:
        OperatingState = store.types[OPERATING_STATE]
        events += [(x, "/MTML/operating_state", OPERATING_STATE,
                    OperatingState(header=header(x), state=state, is_homed=homed, is_busy=False))
                   for x, state, homed in states]
    return write_events(path, events)


def _commanded(index, q):
    return 0.2 * np.cos(q) + 0.01 * index


def test_pose_bag_loads_averaged_poses(tmp_path):
    grid_path = _grid(tmp_path)
    poses = _poses(grid_path)
    bag = _write_bag(tmp_path / "bag", grid_path, poses, setpoint=_commanded, skip_pose=5)
    data = _load_all(bag)
    assert len(data.q) == len(poses) - 1 and data.dropped == 1
    assert np.allclose(data.q, np.delete(poses, 5, axis=0))
    kept = np.delete(np.arange(len(poses)), 5)
    assert np.allclose(data.tau, [_commanded(i, q) for i, q in zip(kept, data.q, strict=True)])  # setpoint_js
    assert data.effort_topic == "/MTML/setpoint_js" and data.skipped == ""
    assert set(data.joint) == {6}
    assert list(data.direction[:4]) == [1, 1, 1, 1] and list(data.direction[4:7]) == [-1, -1, -1]
    assert set(np.round(data.auxiliary, 6)) == {0.3, -0.3}
    measured = _load_all(bag, effort="measured")
    assert np.allclose(measured.tau, 0.1 * np.sin(data.q)) and measured.effort_topic == "/MTML/measured_js"
    with pytest.raises(DataError, match="effort 'both'"):
        _load_all(bag, effort="both")


def test_pose_bag_gives_each_pose_the_state_its_cable_was_in(tmp_path):
    """The direction state over the whole measured_js stream: a sweep's first pose, where the joint has not
    moved since the last sweep's end, is still on the last sweep's branch; the next ones are on their own.
    The fit weighs each pose by it (test_gc.py); ``travel=None`` leaves the sweep's direction alone."""
    grid_path = _grid(tmp_path)
    poses = _poses(grid_path)
    data = _load_all(_write_bag(tmp_path / "bag", grid_path, poses, setpoint=_commanded))
    expected = np.array([0, 1, 1, 1, 1, -1, -1, -1, -1, 1, 1, 1, 1, -1, -1, -1], dtype=float)  # joint 6's cable
    assert np.allclose(data.branch, expected, atol=1e-6)  # 1/3 rad a step: e^(-16.7) of the turn left
    assert list(data.direction) == [1] * 4 + [-1] * 4 + [1] * 4 + [-1] * 4
    assert _load_all(tmp_path / "bag", travel=None).branch is None


def test_only_the_player_of_the_bags_own_arm_cuts_it(tmp_path):
    """Another arm's player reports SAMPLING for pose 5 while the MTML moves to each pose, and the MTML never
    samples pose 5: on the other player's own per-arm topic, or on the global topic of older bags, its windows
    never give pose 5 (or any other) an MTML sample."""
    grid_path = _grid(tmp_path)
    poses = _poses(grid_path)
    expected = _load_all(_write_bag(tmp_path / "alone", grid_path, poses, setpoint=_commanded, skip_pose=5))
    assert expected.dropped == 1 and np.allclose(expected.q, np.delete(poses, 5, axis=0))
    for legacy in (False, True):
        bag = _write_bag(tmp_path / f"mixed-{legacy}", grid_path, poses, setpoint=_commanded, skip_pose=5,
                         legacy=legacy, other_player=("PSM1", 5))
        data = _load_all(bag)
        assert data.dropped == 1, legacy
        assert np.allclose(data.q, expected.q) and np.allclose(data.tau, expected.tau), legacy
    old = _write_bag(tmp_path / "old", grid_path, poses, setpoint=_commanded, legacy=True)
    assert np.allclose(_load_all(old).q, poses)  # a bag of before the per-arm topics still loads


def test_stamp0_samples_and_a_not_ready_arm_are_not_data(tmp_path):
    """Stamp-0 samples (zeros) inside the sampling windows are skipped and counted; so are samples received
    while /MTML/operating_state said FAULT (here with valid stamps, so only the state can tell)."""
    grid_path = _grid(tmp_path)
    poses = _poses(grid_path)
    bag = _write_bag(tmp_path / "bag", grid_path, poses, setpoint=_commanded, invalid={1, 3}, samples=6)
    data = _load_all(bag)
    assert np.allclose(data.q, poses)  # a zero sample averaged in would pull the pose towards 0
    assert np.allclose(data.tau, [_commanded(i, q) for i, q in enumerate(poses)])
    assert data.invalid_samples == 2 * 2 * len(poses)  # two per pose, on measured_js and setpoint_js
    assert data.skipped == f"{data.invalid_samples} samples with header.stamp 0 skipped"
    # pose 2: moving samples 10.19-10.21 s, sampling 10.22-10.27 s; the arm is in FAULT from 10.205 to 10.3 s
    fault = _write_bag(tmp_path / "fault", grid_path, poses, setpoint=_commanded, samples=6,
                       states=[(9.0, "ENABLED", True), (10.205, "FAULT", False), (10.3, "ENABLED", True)])
    data = _load_all(fault, effort="measured")
    assert data.dropped == 1 and np.allclose(data.q, np.delete(poses, 2, axis=0))
    assert data.not_ready_samples == 1 + 6 + 2 and data.invalid_samples == 0
    assert _load_all(fault).not_ready_samples == 2 * 9  # measured_js and setpoint_js
    with pytest.raises(DataError, match="no /MTML/measured_js sample while /MTML/operating_state said"):
        _load_all(_write_bag(tmp_path / "off", grid_path, poses, setpoint=_commanded,
                              states=[(9.0, "DISABLED", False)]))


def test_bag_without_player_status_or_setpoint_is_refused(tmp_path):
    from dvrk_ident_ros.data.bags import write_joint_state_bag

    t = 1.0 + np.arange(5) * 0.01
    bag = write_joint_state_bag(tmp_path / "bag", {"/MTML/measured_js": (t, np.zeros((5, 7)), np.zeros((5, 7)),
                                                                         np.zeros((5, 7)))})
    with pytest.raises(DataError, match="not a pose-grid recording"):
        _load_all(bag)
    grid_path = _grid(tmp_path)
    old = _write_bag(tmp_path / "old", grid_path, _poses(grid_path))  # recorded without setpoint_js
    with pytest.raises(DataError, match=r"no /MTML/setpoint_js: the fit uses the commanded effort.*--effort measured"):
        _load_all(old)
    assert len(_load_all(old, effort="measured").q) == len(_poses(grid_path))


def _mlse_grid(tmp_path):
    """Sweeps of every joint 1-6 in both directions, as MLSE needs (auxiliary values as test_gc's)."""
    aux = {6: 4, 5: 2, 4: 2, 3: 1}
    sweeps = []
    for i in range(1, 7):
        for a in (np.linspace(-0.3, 0.3, 3) if i in aux else [0.0]):
            base = np.array([0.2, 0.1, 0.1, 0.0, 1.5, 0.0, 0.0])
            if i in aux:
                base[aux[i]] = a
            poses = np.tile(base, (12, 1))
            poses[:, i - 1] = np.linspace(-1.0, 1.2, 12)
            for direction in ("positive", "negative"):
                sweeps.append({"estimated_joint": i, "auxiliary_joint": aux.get(i, 0) + 1 if i in aux else None,
                               "auxiliary_value": float(a) if i in aux else None, "direction": direction,
                               "poses": (poses if direction == "positive" else poses[::-1]).tolist()})
    return save_grid(tmp_path / "mlse_grid.yaml", {"arm": "MTML", "coordinates": "dvrk", "units": "rad",
                                                   "settle_time": 0.1, "samples_per_pose": 2, "sweeps": sweeps})


def test_gc_fit_uses_the_commanded_effort_unless_told_otherwise(tmp_path, capsys):
    """`dvrk-ident gc fit` on a bag whose setpoint_js and measured_js efforts differ: the default fit is the
    setpoint's (known parameters recovered), `--effort measured` the measured's."""
    rng = np.random.default_rng(8)
    theta_pos = np.zeros(40)
    theta_pos[:10] = rng.normal(0, 0.05, 10)
    theta_pos[10:] = rng.normal(0, 0.02, 30)
    theta_pos[17:20] = 0.0  # joint 2 is first order; the same parameters in both directions
    grid_path = _mlse_grid(tmp_path)
    poses = _poses(grid_path)
    commanded = torques(poses, theta_pos)
    current = 1.3 * commanded + 0.05  # a different measured effort
    bag = _write_bag(tmp_path / "bag", grid_path, poses, samples=2,
                     setpoint=lambda i, q: commanded[i], measured=lambda i, q: current[i])
    for effort, expected in ((None, commanded), ("measured", current)):
        out = tmp_path / f"gc-{effort}.json"
        args = ["gc", "fit", "--data", str(bag), "--arm", "MTML", "--out", str(out)]
        assert cli.main(args + (["--effort", effort] if effort else [])) == 0
        printed = capsys.readouterr().out
        assert f"efforts from /MTML/{effort or 'setpoint'}_js" in printed
        params = load_gc(out)
        assert np.allclose(params.theta_pos, fit_mlse(_grid_poses(grid_path, expected)).theta(+1), atol=1e-9)
        if effort is None:
            assert np.allclose(params.theta_pos, theta_pos, atol=1e-8)
            assert np.allclose(params.theta_neg, theta_pos, atol=1e-8)
            assert "poses weighted by their cable's recorded state (travel width 0.02 rad)" in printed
    assert cli.main(["gc", "fit", "--data", str(bag), "--arm", "MTML", "--out", str(tmp_path / "d.json"),
                     "--travel", "0"]) == 0
    assert "recorded state" not in capsys.readouterr().out  # by the sweeps' directions
    assert cli.main(["gc", "fit", "--data", str(bag), "--arm", "MTML", "--travel", "-1"]) == 2
    assert "travel -1" in capsys.readouterr().err


def _grid_poses(grid_path, tau):
    """The grid's poses with efforts ``tau``, as the loader should average them."""
    sweeps = yaml.safe_load(grid_path.read_text())["sweeps"]
    rows = [(s["estimated_joint"], 1 if s["direction"] == "positive" else -1,
             np.nan if s["auxiliary_value"] is None else s["auxiliary_value"], k) for k, s in enumerate(sweeps)
            for _ in s["poses"]]
    joint, direction, aux, sweep = (np.array(c) for c in zip(*rows, strict=True))
    return PoseData(_poses(grid_path), tau, joint, direction, aux, sweep)


def test_trim_leaves_out_every_sweeps_first_pose_reached(tmp_path):
    """The arm reaches a sweep's first pose from the other direction (cable hysteresis in that motion's
    state): trim (1, 0) leaves it out, as the simulated collection and gc_calibration do; the default keeps
    every pose."""
    grid_path = _grid(tmp_path)
    poses = _poses(grid_path)
    bag = _write_bag(tmp_path / "bag", grid_path, poses, setpoint=_commanded)
    assert len(load_poses(bag).q) == len(poses)
    data = load_poses(bag, trim=(1, 0))
    first = [0, 4, 8, 12]  # four sweeps of four poses
    assert len(data.q) == len(poses) - 4
    assert np.allclose(data.q, np.delete(poses, first, axis=0))
    assert len(load_poses(bag, trim=(1, 1)).q) == len(poses) - 8
    # a first pose the player reached but got no samples at is still the one reached first: the second
    # came from it, in the sweep's direction, and is kept
    skipped = load_poses(_write_bag(tmp_path / "skip", grid_path, poses, setpoint=_commanded, skip_pose=4),
                         trim=(1, 0))
    assert np.allclose(skipped.q, data.q)
    with pytest.raises(DataError, match="negative"):
        load_poses(bag, trim=(-1, 0))
