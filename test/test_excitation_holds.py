"""Static-hold pose grids (ROS-free): random poses inside every limit, a grid file the loader and the player's
playback take, and `dvrk-ident trajectory holds`."""
from __future__ import annotations

import numpy as np
import pytest

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.excitation.files import load_grid, save_grid
from dvrk_ident_ros.excitation.holds import HOLDS_KIND, holds_grid, random_poses
from dvrk_ident_ros.excitation.playback import GridPlayback
from dvrk_ident_ros.model.arm_model import load_model
from dvrk_ident_ros.safety import CommandChecker


@pytest.fixture(scope="module")
def psm_checker() -> CommandChecker:
    return CommandChecker(load_model("psm"), "PSM1", section="hardware")


def test_random_poses_are_inside_every_limit_and_spread_over_the_central_ranges(psm_checker):
    poses = random_poses(psm_checker, 400, np.random.default_rng(1), fraction=0.9)
    assert poses.shape == (400, psm_checker.dof)
    assert all(psm_checker.first_position_violation(q[None]) is None for q in poses)
    pitch = poses[:, 1]  # spread: both halves of the pitch range, not a cluster
    assert pitch.min() < np.percentile(pitch, 50) - 0.3 and pitch.max() > np.percentile(pitch, 50) + 0.3
    assert np.array_equal(poses, random_poses(psm_checker, 400, np.random.default_rng(1), fraction=0.9))


def test_a_holds_grid_round_trips_and_the_player_plays_every_pose(tmp_path, psm_checker):
    grid = holds_grid("psm1", psm_checker, poses=12, seed=3, settle=2.0, samples=100, approach="random")
    path = save_grid(tmp_path / "holds.yaml", grid)
    loaded = load_grid(path, arm="PSM1")
    assert loaded["kind"] == HOLDS_KIND and loaded["arm"] == "PSM1"
    assert loaded["settle_time"] == 2.0 and loaded["samples_per_pose"] == 100
    playback = GridPlayback(loaded, psm_checker)
    assert len(playback.poses) == 12 and not playback.skipped
    with pytest.raises(DataError, match="not the PSM2"):
        load_grid(path, arm="PSM2")


def test_bad_holds_arguments_are_refused(psm_checker):
    for kwargs in ({"poses": 0}, {"fraction": 0.0}, {"fraction": 1.5}, {"settle": -1.0}, {"samples": 0},
                   {"approach": "above"}):
        with pytest.raises(DataError, match="expected poses >= 1"):
            holds_grid("PSM1", psm_checker, **kwargs)


def test_trajectory_holds_command_writes_the_grid(tmp_path, capsys):
    from dvrk_ident_ros.app import cli

    out = tmp_path / "psm2_holds.yaml"
    assert cli.main(["trajectory", "holds", "--arm", "psm2", "--poses", "20", "--out", str(out)]) == 0
    assert "PSM2: 20 static holds (both_sides;" in capsys.readouterr().out
    grid = load_grid(out, arm="PSM2")
    assert len(grid["sweeps"][0]["poses"]) == 20 and grid["settle_time"] == 2.0


def test_both_sides_holds_reach_each_pose_from_above_and_below(psm_checker):
    """The default design: each pose p held as p + d, p, p - d, p (d 2 % of each joint's range), all four
    inside every limit, poses rounded up to a multiple of 4; the player plays every one of them."""
    from dvrk_ident_ros.excitation.holds import APPROACH_OFFSET, joint_ranges

    grid = holds_grid("PSM1", psm_checker, poses=10, seed=5)
    assert grid["approach"] == "both_sides"
    q = np.asarray(grid["sweeps"][0]["poses"])
    assert q.shape == (12, psm_checker.dof)
    lo, hi = joint_ranges(psm_checker)
    d = APPROACH_OFFSET * (hi - lo)
    assert d[2] == pytest.approx(0.02 * (hi[2] - lo[2])) and 0.003 < d[2] < 0.004  # insertion: 3.3 mm
    for k in range(0, 12, 4):
        above, p, below, again = q[k:k + 4]
        np.testing.assert_allclose(above, p + d)
        np.testing.assert_allclose(below, p - d)
        np.testing.assert_array_equal(again, p)
    assert psm_checker.first_position_violation(q) is None
    assert len({tuple(p) for p in q[1::4]}) == 3  # three distinct poses
    playback = GridPlayback(grid, psm_checker)
    assert len(playback.poses) == 12 and not playback.skipped


@pytest.mark.parametrize("arm, family, count, stratified", [("PSM1", "psm", 8, 7), ("MTML", "mtm", 12, 7),
                                                             ("MTML", "mtm", 64, 7), ("PSM1", "psm", 64, 6)])
def test_stratified_poses_hold_every_joint_once_in_each_strip_of_its_range(arm, family, count, stratified):
    """The Latin hypercube: each joint's central range cut into ``count`` strips, exactly one pose in each (so
    both ends of every range are held), every pose and its both-sides neighbours inside every limit, the MTM's
    coupled q2 + q3 limit too; reproducible from the seed. 64 PSM poses: the jaw wide open leaves the wrist yaw
    no room in some strips, so the jaw is drawn freely and joints 1-6 are stratified."""
    from dvrk_ident_ros.excitation.holds import APPROACH_OFFSET, joint_ranges, stratified_poses

    checker = CommandChecker(load_model(family), arm, section="hardware")
    lo, hi = joint_ranges(checker)
    offset = APPROACH_OFFSET * (hi - lo)
    fraction = 0.9
    poses = stratified_poses(checker, count, np.random.default_rng(2), fraction=fraction, offset=offset)
    assert poses.shape == (count, checker.dof)
    low = (lo + hi) / 2 - (hi - lo) / 2 * fraction
    strip = np.floor((poses - low) / ((hi - lo) * fraction / count)).astype(int)
    for j in range(stratified):
        assert sorted(strip[:, j]) == list(range(count)), f"joint {j + 1}: strips {sorted(strip[:, j])}"
    for q in poses:
        assert checker.first_position_violation(np.stack([q, q + offset, q - offset])) is None
    again = stratified_poses(checker, count, np.random.default_rng(2), fraction=fraction, offset=offset)
    np.testing.assert_array_equal(poses, again)


def test_stratified_poses_that_cannot_meet_the_limits_are_refused(psm_checker):
    from dvrk_ident_ros.excitation.holds import stratified_poses

    with pytest.raises(DataError, match="Latin hypercube"):
        stratified_poses(psm_checker, 4, np.random.default_rng(0), fraction=0.9, offset=np.full(psm_checker.dof, 9.0))
