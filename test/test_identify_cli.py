"""identify / predict / added-mass from the command line, on recordings made by the model."""
from __future__ import annotations

import json

import numpy as np
import pytest

from dvrk_ident_ros.app import cli
from dvrk_ident_ros.identify.results import IdentificationResult
from dvrk_ident_ros.identify.synthetic import plausible_parameters, random_fourier, synthetic_recording
from dvrk_ident_ros.model.arm_model import load_model


def _write_wpi(path, data):
    return _write_wpi_array(path, np.hstack([data.q, data.qd, data.tau]))


def _write_wpi_array(path, rows):
    np.savetxt(path, rows, delimiter=",")
    return path


@pytest.fixture(scope="module")
def psm_recordings(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("rec")
    model = load_model("psm")
    rng = np.random.default_rng(21)
    delta = plausible_parameters(model, rng)
    traj = random_fourier(model, rng, base_frequency=0.18, amplitude=0.3)
    before, _ = synthetic_recording(model, delta, traj, rate=200.0, duration=3 * traj.period)
    heavier = delta.copy()
    heavier[model.layout.index("m2''")] += 0.2  # 200 g at the frame origin of link 2''
    after, _ = synthetic_recording(model, heavier, traj, rate=200.0, duration=3 * traj.period)
    return _write_wpi(tmp / "before.csv", before), _write_wpi(tmp / "after.csv", after), before.samples


def test_identify_then_predict(psm_recordings, tmp_path, capsys):
    before, _, samples = psm_recordings
    params = tmp_path / "psm.json"
    assert cli.main(["identify", "--arm", "psm", "--data", str(before), "--format", "wpi-csv",
                     "--method", "sdp", "--out", str(params)]) == 0
    result = IdentificationResult.load(params)
    assert result.solver["status"] == "optimal" and result.arm == "psm"
    assert max(result.errors["training"]) < 0.05
    assert (tmp_path / "psm_report.txt").is_file() and (tmp_path / "psm_torques.png").is_file()
    pred = tmp_path / "pred.csv"
    assert cli.main(["predict", "--params", str(params), "--data", str(before), "--out", str(pred)]) == 0
    lines = pred.read_text().splitlines()
    assert lines[0] == "tau1,tau2,tau3,tau4,tau5,tau6,tau7"
    assert len(lines) == samples + 1
    measured = np.loadtxt(before, delimiter=",")[:, 14:]
    predicted = np.loadtxt(pred, delimiter=",", skiprows=1)
    middle = slice(200, -200)
    assert np.linalg.norm(predicted[middle] - measured[middle]) < 0.1 * np.linalg.norm(measured[middle])


def test_added_mass_recovers_a_known_mass(psm_recordings, capsys):
    before, after, _ = psm_recordings
    assert cli.main(["added-mass", "--arm", "psm", "--link", "2''", "--before", str(before),
                     "--after", str(after)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert abs(out["mass_kg"] - 0.2) < 0.01
    assert out["std_kg"] >= 0


def test_added_mass_from_repeated_recordings(psm_recordings, tmp_path, capsys):
    """Several recordings per side go into one fit (here a second no-weight run with other noise)."""
    before, after, _ = psm_recordings
    data = np.loadtxt(before, delimiter=",")
    rerun = data.copy()
    rerun[:, 14:] += np.random.default_rng(3).normal(0.0, 0.005, rerun[:, 14:].shape)
    second = _write_wpi_array(tmp_path / "before2.csv", rerun)
    assert cli.main(["added-mass", "--arm", "psm", "--link", "2''", "--before", str(before), str(second),
                     "--after", str(after)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert abs(out["mass_kg"] - 0.2) < 0.01 and out["std_kg"] > 0


def test_added_mass_off_the_frame_origin_is_found_with_its_position(tmp_path):
    """A weight taped away from link 2'''s frame origin (as on the real PSM): the point mass at the origin is
    biased, so the estimate must be the model with the weight's position, picked by the BIC."""
    from dvrk_ident_ros.identify.added_mass import estimate_added_mass

    model = load_model("psm")
    rng = np.random.default_rng(8)
    delta = plausible_parameters(model, rng)
    traj = random_fourier(model, rng, base_frequency=0.18, amplitude=0.3)
    noise = np.array([0.01, 0.01, 0.05, 5e-4, 5e-4, 5e-4, 5e-4])  # N m (N), about the real PSM's levels
    before, _ = synthetic_recording(model, delta, traj, duration=2 * traj.period, noise=noise, rng=rng)
    mass, offset = 0.205, np.array([0.0, -0.1, 0.02])  # m, in the link frame
    heavier = delta.copy()
    block = model.layout.inertial_blocks["2''"]
    heavier[block + 6:block + 9] += mass * offset  # first moment
    heavier[block + 9] += mass
    after, _ = synthetic_recording(model, heavier, traj, duration=2 * traj.period, noise=noise, rng=rng)
    est = estimate_added_mass(model, "2''", before, after)
    assert est.model == "position"
    assert abs(est.mass_kg - mass) < 0.02 * mass and abs(est.mass_kg - mass) < 3 * est.std_kg
    assert np.allclose(est.offset_m[1:], offset[1:], atol=0.005)  # x lies along the motion: not separable
    assert abs(est.at_origin[0] - mass) > 0.1 * mass  # what a weight assumed at the origin would have given


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["identify", "--arm", "psm", "--data", "/nonexistent.csv", "--out", "x.json"], "no such file"),
        (["identify", "--arm", "suj", "--data", "/nonexistent.csv", "--out", "x.json"], "unknown arm"),
        (["added-mass", "--arm", "psm", "--link", "9", "--before", "B", "--after", "A"], "no such file"),
        (["predict", "--params", "/nonexistent.json", "--data", "d.csv", "--out", "p.csv"], "cannot read"),
    ],
)
def test_bad_input_is_one_line(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err
    assert not (tmp_path / "x.json").exists()


@pytest.mark.parametrize("spelling", ["2''", "2pp", "2\u2033", "2\u2032\u2032", " 2'' "])
def test_link_names_in_shell_friendly_spellings(spelling):
    from dvrk_ident_ros.identify.added_mass import link_name

    assert link_name(load_model("psm"), spelling) == "2''"


def test_unknown_link_for_added_mass(psm_recordings, capsys):
    before, after, _ = psm_recordings
    assert cli.main(["added-mass", "--arm", "psm", "--link", "9", "--before", str(before),
                     "--after", str(after)]) == 2
    assert "link '9' carries no inertial parameters" in capsys.readouterr().err


def test_a_parameter_file_without_its_fields_is_one_data_error(tmp_path):
    from dvrk_ident_ros.errors import DataError
    from dvrk_ident_ros.identify.results import FORMAT

    path = tmp_path / "p.json"
    path.write_text(json.dumps({"format": FORMAT, "arm": "psm"}))
    with pytest.raises(DataError, match="parameter file without description_hash"):
        IdentificationResult.load(path)


def test_infeasible_solve_writes_no_parameter_file(psm_recordings, tmp_path, capsys):
    import yaml

    from dvrk_ident_ros.model.description import config_directory

    raw = yaml.safe_load((config_directory() / "psm.yaml").read_text())
    raw["bounds"]["links"]["1"] = {"mass": [-2.0, -1.0]}  # no physical body has it
    desc = tmp_path / "psm_bad.yaml"
    desc.write_text(yaml.safe_dump(raw, sort_keys=False))
    before, _, _ = psm_recordings
    out = tmp_path / "p.json"
    assert cli.main(["identify", "--arm", str(desc), "--data", str(before), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "SDP: solver status" in err and "infeasible" in err
    assert not out.exists()


def test_identify_options_reach_the_parameter_file(psm_recordings, tmp_path):
    before, _, _ = psm_recordings
    params = tmp_path / "p.json"
    assert cli.main(["identify", "--arm", "psm", "--data", str(before), "--method", "wls", "--cutoff", "3.5",
                     "--torque-lags", "none", "--no-plots", "--out", str(params)]) == 0
    result = IdentificationResult.load(params)
    assert result.filter["cutoff_hz"] == 3.5 and result.torque_lags == [0.0] * 7


def test_a_recording_at_the_bridges_default_100_hz_gets_a_note():
    """The identification's summary says when a recording is sampled below 150 Hz (at 100 Hz the PSM's
    training errors were 48-94 % against 5-44 % at 1 kHz, README); 200 Hz and 1 kHz get none."""
    import numpy as np

    from dvrk_ident_ros.jobs.offline import low_rate_note

    t100, t200, t1k = (np.arange(0.0, 10.0, 1.0 / rate) for rate in (100.0, 200.0, 1000.0))
    note = low_rate_note(["a/psm_100hz", "b/psm_1khz"], [t100, t1k])
    assert note.startswith("psm_100hz at 100 Hz:") and "1 kHz" in note and "psm_1khz" not in note
    assert low_rate_note(["x", "y"], [t200, t1k]) == "" and low_rate_note(["z"], [t100[:1]]) == ""
