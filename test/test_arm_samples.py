"""How a commanding node reads the arm's measured_js (arm/samples.py): the dVRK bridge's stamp 0 (invalid data),
the last sample republished behind a stalled arm loop, a PSM without its tool (7 raw joints), NaN."""
from __future__ import annotations

import math

import numpy as np
import pytest

from dvrk_ident_ros.arm.registry import arm_spec
from dvrk_ident_ros.arm.samples import ArmSamples, SampleKind, repeats

MTM_POSE = [0.1, 0.2, -0.3, 0.4, -0.5, 0.6, 0.7]


def test_a_valid_sample_is_the_pose_and_fresh():
    samples = ArmSamples("MTML", arm_spec("MTML"))
    assert samples.stale(10.0, 0.1) and samples.age(10.0) is None
    assert samples.on_sample(1000, 5_000_000, MTM_POSE, now=10.0) is SampleKind.VALID
    assert np.array_equal(samples.q, MTM_POSE) and samples.stamp == pytest.approx(1000.005)
    assert samples.age(10.05) == pytest.approx(0.05) and not samples.stale(10.05, 0.1)
    assert samples.reason(10.05, 0.1) == ""
    assert samples.stale(10.11, 0.1) and "no recent /MTML/measured_js" in samples.reason(10.11, 0.1)


def test_stamp_0_is_never_the_pose_nor_fresh():
    samples = ArmSamples("MTML", arm_spec("MTML"))
    samples.on_sample(1000, 0, MTM_POSE, now=10.0)
    for k in range(5):  # the bridge's zeros, stamped 0
        assert samples.on_sample(0, 0, [0.0] * 7, now=10.02 + 0.01 * k) is SampleKind.INVALID
    assert np.array_equal(samples.q, MTM_POSE) and samples.fresh_at == 10.0 and samples.invalid == 5
    assert "stamp 0 (invalid data)" in samples.reason(10.2, 0.1)


def test_a_repeated_stamp_keeps_the_pose_and_is_not_fresh():
    """The arm's loop stalled: the bridge publishes its last sample again, stamp and all."""
    samples = ArmSamples("MTML", arm_spec("MTML"))
    samples.on_sample(1000, 10_000_000, MTM_POSE, now=10.0)
    for k in range(20):
        assert samples.on_sample(1000, 10_000_000, MTM_POSE, now=10.01 * (k + 1)) is SampleKind.REPEATED
    assert samples.fresh_at == 10.0 and samples.repeated == 20 and samples.stale(10.2, 0.1)
    assert "repeats one stamp" in samples.reason(10.2, 0.1)
    moved = [x + 0.01 for x in MTM_POSE]  # the loop runs again
    assert samples.on_sample(1000, 20_000_000, moved, now=10.21) is SampleKind.VALID
    assert np.allclose(samples.q, moved) and samples.reason(10.25, 0.1) == ""


def test_the_bridge_s_repeats_vary_by_microseconds_a_new_sample_advances_a_period():
    """cisst-ros converts the stamp anew at every publish (ROS now - (arm clock now - the data's time)): a sample
    published again carries its stamp give or take microseconds; the arm's next sample is a 1.5 kHz period on."""
    samples = ArmSamples("MTML", arm_spec("MTML"))
    base = 1_000_010_000  # ns past the second
    samples.on_sample(1795, base, MTM_POSE, now=10.0)
    for k, jitter_ns in enumerate((3_000, -2_500, 800, -40_000, 150_000)):
        assert samples.on_sample(1795, base + jitter_ns, MTM_POSE, now=10.01 * (k + 1)) is SampleKind.REPEATED
    assert samples.repeated == 5 and samples.fresh_at == 10.0
    assert samples.on_sample(1795, base + 666_667, MTM_POSE, now=10.06) is SampleKind.VALID  # one period on
    # a publisher of its own bursting new samples microseconds apart: new positions, a new sample
    burst = [x + 1e-4 for x in MTM_POSE]
    assert samples.on_sample(1795, base + 666_667 + 20_000, burst, now=10.061) is SampleKind.VALID
    # a clock stepped back by a second: a new timeline, not the last sample again
    assert samples.on_sample(1794, base, MTM_POSE, now=10.07) is SampleKind.VALID
    assert repeats(1.0 + 2e-6, 1.0) and not repeats(1.0 + 6.7e-4, 1.0) and not repeats(1.0, None)


def test_a_psm_without_its_tool_and_nan_are_rejected_and_the_jaw_is_waited_for():
    spec = arm_spec("PSM1")
    samples = ArmSamples("PSM1", spec)
    assert samples.on_sample(1000, 0, [0.0] * 7, now=10.0) is SampleKind.MALFORMED  # 7 raw joints: no tool
    assert "7 positions" in samples.reason(10.0, 0.1) and "tool engaged" in samples.reason(10.0, 0.1)
    assert samples.on_sample(1000, 1, [0.0, math.nan, 0.1, 0.0, 0.0, 0.0], now=10.0) is SampleKind.MALFORMED
    assert samples.last_malformed == "a NaN" and samples.malformed == 2 and samples.fresh_at is None
    pose = [0.1, -0.2, 0.12, 0.3, -0.1, 0.2]
    assert samples.on_sample(1000, 2, pose, now=10.0) is SampleKind.VALID
    assert "jaw/measured_js" in samples.reason(10.0, 0.1)  # the jaw has not been heard yet
    assert not samples.on_jaw(0, 0, [0.5]) and not samples.on_jaw(1000, 3, [math.nan])
    assert samples.on_jaw(1000, 3, [0.5]) and samples.reason(10.0, 0.1) == ""
    assert np.allclose(samples.q, [*pose, 0.5]) and spec.jaw_index == 6


def test_without_a_time_yet_the_pose_is_taken_but_nothing_is_fresh():
    """use_sim_time before /clock: the node has no time to stamp the arrival with."""
    samples = ArmSamples("MTML", arm_spec("MTML"))
    assert samples.on_sample(1000, 0, MTM_POSE, now=None) is SampleKind.VALID
    assert np.array_equal(samples.q, MTM_POSE) and samples.fresh_at is None and samples.stale(0.0, 0.1)


def test_the_states_rate_by_its_stamps():
    """ArmSamples measures the rate of its fresh samples by their stamps (the player's warning below 150 Hz,
    arm/state_rate.py): invalid, repeated and malformed samples do not count; the window is the last 64 samples."""
    from dvrk_ident_ros.arm.state_rate import IDENTIFICATION_RATE, StampRate

    samples = ArmSamples("MTML", arm_spec("MTML"))
    assert samples.stamp_rate.rate() is None
    q = np.zeros(7)
    for k in range(100):  # 100 Hz, then 1 kHz: the window holds only the newest 64
        q[0] = 1e-3 * k
        samples.on_sample(1, 10_000_000 * k, q.tolist(), 1.0)
        samples.on_sample(0, 0, [0.0] * 7, 1.0)  # invalid: not counted
        samples.on_sample(1, 10_000_000 * k, q.tolist(), 1.0)  # repeated: not counted
    assert samples.stamp_rate.count == 100
    assert samples.stamp_rate.rate() == pytest.approx(100.0) and samples.stamp_rate.rate() < IDENTIFICATION_RATE
    for k in range(64):
        q[0] = -1e-3 * k
        samples.on_sample(2, 1_000_000 * k, q.tolist(), 2.0)
    assert samples.stamp_rate.rate() == pytest.approx(1000.0)
    ring = StampRate(window=4)
    for stamp in (0.0, 0.01, 0.02, 0.03, 0.035, 0.04):  # the ring wraps: 0.02 0.03 0.035 0.04 held
        ring.add(stamp)
    assert ring.rate() == pytest.approx(1 / 0.005)
    with pytest.raises(ValueError, match="at least 2"):
        StampRate(window=1)
