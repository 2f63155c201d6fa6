"""Loaders and processing of recordings (issue: identification, deliverables 1-2)."""
from __future__ import annotations

import numpy as np
import pytest

from dvrk_ident_ros.data.loaders import load_dataset
from dvrk_ident_ros.data.processing import FilterSettings, lowpass, process
from dvrk_ident_ros.errors import DataError


def _write_wpi(path, rows=1000, rate=200.0, nan_row=None, columns=21):
    t = np.arange(rows) / rate
    q = np.sin(2 * np.pi * 0.3 * t)[:, None] * np.arange(1, 8)
    data = np.hstack([q, np.gradient(q, t, axis=0), 0.5 * q])[:, :columns]
    if nan_row is not None:
        data[nan_row, 3] = np.nan
    np.savetxt(path, data, delimiter=",")
    return t, q


def test_wpi_csv_roundtrip(tmp_path):
    _, q = _write_wpi(tmp_path / "a.csv")
    data = load_dataset(tmp_path / "a.csv")
    assert data.samples == 1000 and data.joints == 7
    assert data.rate == pytest.approx(200.0)
    assert np.allclose(data.q, q)


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda p: _write_wpi(p, nan_row=17), r"1 row\(s\) with NaN or infinite q \(first at data row 18\)"),
        (lambda p: _write_wpi(p, columns=20), "20 columns, expected 21"),
        (lambda p: p.write_text(""), "empty file"),
        (lambda p: p.write_text("1,2,x\n"), "not a numeric CSV"),
    ],
    ids=["nan", "wrong-joint-count", "empty", "garbage"],
)
def test_wpi_csv_bad_input(tmp_path, setup, message):
    path = tmp_path / "bad.csv"
    setup(path)
    with pytest.raises(DataError, match=message):
        load_dataset(path, "wpi-csv")


def test_headed_csv_missing_column(tmp_path):
    path = tmp_path / "h.csv"
    names = ["t"] + [f"q{j}" for j in range(1, 8)] + [f"tau{j}" for j in range(1, 7)]
    path.write_text(",".join(names) + "\n" + ",".join(["0.1"] * len(names)) + "\n")
    with pytest.raises(DataError, match=r"missing column.*tau7"):
        load_dataset(path)


def test_unknown_format_and_missing_file(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        load_dataset(tmp_path / "nope.csv")
    (tmp_path / "x.dat").write_text("1")
    with pytest.raises(DataError, match="cannot tell the format"):
        load_dataset(tmp_path / "x.dat")
    with pytest.raises(DataError, match="unknown format 'mat'"):
        load_dataset(tmp_path / "x.dat", "mat")


def test_lowpass_cutoff_is_where_it_is_designed():
    """-6 dB (two passes of -3 dB) at the cutoff: the original package's pi-times error would fail this."""
    fs, fc = 200.0, 1.8
    t = np.arange(0, 60, 1 / fs)
    for f, expected in ((0.3, 1.0), (fc, 0.5), (4 * fc, 0.0)):
        y = lowpass(np.sin(2 * np.pi * f * t)[:, None], fs, fc, 6)[2000:-2000, 0]
        gain = np.sqrt(2) * np.std(y)
        assert gain == pytest.approx(expected, abs=0.02), f
    with pytest.raises(DataError, match="cutoff"):
        lowpass(np.zeros((100, 1)), fs, 150.0, 6)


def test_process_accelerations_and_trimming(tmp_path):
    _write_wpi(tmp_path / "a.csv", rows=4000)
    raw = load_dataset(tmp_path / "a.csv")
    out = process(raw, FilterSettings(cutoff_hz=5.0, trim_seconds=1.0, decimate=2))
    assert out.samples == (4000 - 400 + 1) // 2
    w = 2 * np.pi * 0.3
    expected_qdd = -w * w * out.q  # q = k sin(w t)
    assert np.allclose(out.qdd, expected_qdd, atol=1e-3 * np.abs(expected_qdd).max())
    assert out.processing["cutoff_hz"] == 5.0


def test_real_wpi_recording_loads(shared_dir):
    data = load_dataset(shared_dir / "data/wpi-identification/mtm/one_results.csv", "wpi-csv")
    assert data.samples == 5999 and data.joints == 7
    out = process(data, FilterSettings(cutoff_hz=1.8))
    assert np.all(np.isfinite(out.qdd))
