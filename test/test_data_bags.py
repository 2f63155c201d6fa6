"""rosbag2 recordings (MCAP, as the recorder writes them) load into motor space."""
from __future__ import annotations

import numpy as np
import pytest

from dvrk_ident_ros.data.bags import write_joint_state_bag
from dvrk_ident_ros.data.loaders import load_dataset
from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.model.description import load_description


def _signals(rng, n, joints):
    t = 1000.0 + np.arange(n) / 200.0
    return t, rng.normal(size=(n, joints)), rng.normal(size=(n, joints)), rng.normal(size=(n, joints))


def test_psm_bag_with_separate_jaw_converts_to_motor_space(tmp_path):
    A = load_description("psm").dvrk_from_motor
    rng = np.random.default_rng(0)
    t, q, qd, tau = _signals(rng, 50, 7)
    bag = write_joint_state_bag(tmp_path / "bag", {
        "/PSM1/measured_js": (t, q[:, :6], qd[:, :6], tau[:, :6]),
        "/PSM1/jaw/measured_js": (t, q[:, 6:], qd[:, 6:], tau[:, 6:]),
    })
    data = load_dataset(bag, dvrk_from_motor=A)
    assert data.samples == 50
    assert np.allclose(data.q @ A.T, q) and np.allclose(data.qd @ A.T, qd)
    assert np.allclose(data.tau, tau @ A)  # tau^m = A^T tau^d
    assert np.allclose(data.t, t)


def test_bag_errors(tmp_path):
    A = load_description("mtm").dvrk_from_motor
    rng = np.random.default_rng(1)
    t, q, qd, tau = _signals(rng, 10, 6)
    bag = write_joint_state_bag(tmp_path / "bag", {"/MTML/measured_js": (t, q, qd, tau)})
    with pytest.raises(DataError, match="has 6 joints, the arm has 7"):
        load_dataset(bag, dvrk_from_motor=A)
    with pytest.raises(DataError, match="coupling matrix"):
        load_dataset(bag)
    two = write_joint_state_bag(tmp_path / "two", {"/MTML/measured_js": (t, q, qd, tau),
                                                   "/MTMR/measured_js": (t, q, qd, tau)})
    with pytest.raises(DataError, match="expected one /<ARM>/measured_js topic"):
        load_dataset(two, dvrk_from_motor=A)
