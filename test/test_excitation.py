"""Excitation: Fourier trajectories, limits, optimisation, MLSE pose grids, files."""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import REPO_ROOT

from dvrk_ident_ros.app import cli
from dvrk_ident_ros.errors import DataError, DescriptionError, SolverError
from dvrk_ident_ros.excitation.files import load_grid, load_trajectory, save_grid, save_trajectory
from dvrk_ident_ros.excitation.fourier import quintic, rest_to_rest
from dvrk_ident_ros.excitation.grid import make_grid
from dvrk_ident_ros.excitation.objective import ExcitationProblem, verify
from dvrk_ident_ros.excitation.optimize import optimise
from dvrk_ident_ros.model.arm_model import load_model
from dvrk_ident_ros.model.limits import cartesian_boxes, coordinate_limits


def _random_rest(rng, n=7, H=6, f=0.2):
    return rest_to_rest(f, rng.normal(0, 0.1, n), rng.normal(0, 0.2, (H - 1, n)), rng.normal(0, 0.2, (H - 1, n)))


def test_rest_to_rest_starts_and_ends_at_rest():
    traj = _random_rest(np.random.default_rng(0))
    q, qd, qdd = traj.evaluate(np.array([0.0, traj.period, 3 * traj.period]))
    assert np.allclose(qd, 0, atol=1e-12) and np.allclose(qdd, 0, atol=1e-12)
    assert np.allclose(q[0], q[1]) and np.allclose(q[0], q[2])


def test_analytic_derivatives_match_finite_differences():
    traj = _random_rest(np.random.default_rng(1))
    t = np.linspace(0.3, 4.0, 50)
    h = 1e-6
    q_p, qd_p, _ = traj.evaluate(t + h)
    q_m, qd_m, _ = traj.evaluate(t - h)
    _, qd, qdd = traj.evaluate(t)
    assert np.allclose((q_p - q_m) / (2 * h), qd, atol=1e-7)
    assert np.allclose((qd_p - qd_m) / (2 * h), qdd, atol=1e-6)


def test_basis_reproduces_evaluate():
    traj = _random_rest(np.random.default_rng(2))
    t = np.linspace(0, traj.period, 33)
    for order, values in enumerate(traj.evaluate(t)):
        assert np.allclose(traj.basis(t, order) @ traj.coefficients(), values)


def test_quintic_is_rest_to_rest():
    a, b = np.zeros(3), np.array([1.0, -2.0, 0.5])
    q, qd, qdd = quintic(a, b, 2.0, np.array([0.0, 1.0, 2.0]))
    assert np.allclose(q[0], a) and np.allclose(q[2], b) and np.allclose(q[1], (a + b) / 2)
    assert np.allclose(qd[[0, 2]], 0) and np.allclose(qdd[[0, 2]], 0)


def test_margins_detect_a_violation():
    model = load_model("psm")
    limits = coordinate_limits(model)
    traj = _random_rest(np.random.default_rng(3))
    traj = type(traj)(traj.base_frequency, traj.q0 + 5.0, traj.a, traj.b)  # far outside q1
    worst = min(verify(model, traj, limits, []), key=lambda m: m.margin)
    assert worst.margin < 0


def test_small_optimisation_respects_every_limit_at_1khz():
    model = load_model("psm_simplified")
    limits = coordinate_limits(model)
    result = optimise(model, limits, [], harmonics=3, base_frequency=0.18, starts=1, max_iterations=8,
                      samples=60, constraint_samples=100, progress=False, workers=0)  # in this process
    assert np.isfinite(result.condition_number)
    assert min(m.margin for m in result.margins) >= 0
    _, qd, qdd = result.trajectory.evaluate(np.array([0.0]))
    assert np.allclose(qd, 0) and np.allclose(qdd, 0)


def test_the_answer_does_not_depend_on_the_number_of_worker_processes():
    """Each start has its own random stream and every run a single-threaded BLAS:
    one worker, two workers and a second run with two all give the same trajectory."""
    model = load_model("psm_simplified")
    limits = coordinate_limits(model)
    runs = [optimise(model, limits, [], harmonics=3, base_frequency=0.18, starts=3, max_iterations=8, samples=60,
                     constraint_samples=100, polish=2, finalists=2, progress=False, workers=workers)
            for workers in (1, 2, 2)]
    for other in runs[1:]:
        assert other.starts == runs[0].starts
        assert np.array_equal(other.trajectory.a, runs[0].trajectory.a)
        assert np.array_equal(other.trajectory.b, runs[0].trajectory.b)
    assert len(set(runs[0].starts)) == 3  # three different starts, not one repeated


def _running(pid: int) -> bool:
    """A process that exists and is not a zombie."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal is Linux only")
def test_worker_processes_end_when_the_optimiser_is_killed():
    script = ("import os, signal, time\n"
              "from dvrk_ident_ros.excitation.workers import TaskRunner\n"
              "runner = TaskRunner(2, os.getpid, ())\n"
              "futures = [runner._pool.submit(time.sleep, 30) for _ in range(2)]\n"
              "time.sleep(3)\n"
              "print(*runner._pool._processes, flush=True)\n"
              "os.kill(os.getpid(), signal.SIGKILL)\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    workers = [int(pid) for pid in proc.stdout.split()]
    assert len(workers) == 2, proc.stderr
    deadline = time.monotonic() + 10.0
    while any(_running(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_running(pid) for pid in workers)


def test_objective_gradients_match_central_differences():
    """The chain-rule gradients of the soft log cond and of the extreme log eigenvalues."""
    model = load_model("psm_simplified")
    problem = ExcitationProblem(model, 3, 0.18, coordinate_limits(model), [], 60, 100, 0.002)
    x = problem.feasible_start(np.random.default_rng(0))
    u = np.random.default_rng(1).normal(size=len(x))
    u /= np.linalg.norm(u)
    h = 1e-4  # the condition number is large here: smaller steps drown in rounding
    _, g = problem.soft_log_cond(x)
    fd = (problem.soft_log_cond(x + h * u)[0] - problem.soft_log_cond(x - h * u)[0]) / (2 * h)
    assert g @ u == pytest.approx(fd, rel=1e-3)
    _, J = problem.extreme_log_eigenvalues(x, 3)
    fd = (problem.extreme_log_eigenvalues(x + h * u, 3)[0] - problem.extreme_log_eigenvalues(x - h * u, 3)[0]) / (2 * h)
    assert J @ u == pytest.approx(fd, rel=1e-3, abs=1e-4)


def test_limit_rows_are_the_1khz_check_with_exact_gradients():
    """Each window's extremes: their worst slack is the dense check's worst margin, and
    their Jacobian is the basis row at the extreme (checked by central differences)."""
    model = load_model("mtm")
    limits = coordinate_limits(model)
    problem = ExcitationProblem(model, 6, 0.1, limits, [], 60, 100, 0.0)
    x = problem.feasible_start(np.random.default_rng(2))
    slack, J = problem.limit_slack(x)
    assert slack.min() == pytest.approx(min(m.margin for m in verify(model, problem.trajectory(x), limits, [])),
                                        abs=1e-12)
    u = np.random.default_rng(3).normal(size=len(x))
    h = 1e-7
    fd = (problem.limit_slack(x + h * u)[0] - problem.limit_slack(x - h * u)[0]) / (2 * h)
    assert np.allclose(J @ u, fd, atol=1e-5 * np.abs(fd).max())


def test_overshooting_iterates_are_pulled_inside_along_the_segment_to_the_centre():
    model = load_model("mtm")
    limits = coordinate_limits(model)
    problem = ExcitationProblem(model, 6, 0.1, limits, [], 60, 100, 0.0)
    x = problem.feasible_start(np.random.default_rng(4))
    assert np.array_equal(problem.pull_inside(x), x)  # already inside: untouched
    far = problem.center + 3.0 * (x - problem.center)
    inside = problem.pull_inside(far)
    worst = min(m.margin for m in verify(model, problem.trajectory(inside), limits, []))
    assert -1e-12 <= worst < 1e-9  # on the boundary, not short of it
    moved = np.abs(far - problem.center) > 0
    fraction = (inside - problem.center)[moved] / (far - problem.center)[moved]
    assert 0 < fraction[0] < 1 and np.allclose(fraction, fraction[0])


def test_refining_a_trajectory_never_makes_it_worse():
    """--initial: a feasible trajectory competes for the polish; one of another form is refused."""
    model = load_model("psm_simplified")
    limits = coordinate_limits(model)
    first = optimise(model, limits, [], harmonics=3, base_frequency=0.18, starts=1, max_iterations=8,
                     samples=60, constraint_samples=100, progress=False)
    refined = optimise(model, limits, [], harmonics=3, base_frequency=0.18, starts=0, max_iterations=8,
                       samples=60, constraint_samples=100, progress=False, initial=first.trajectory)
    assert refined.condition_number <= first.condition_number * (1 + 1e-9)
    assert min(m.margin for m in refined.margins) >= 0
    with pytest.raises(SolverError, match="harmonics"):
        optimise(model, limits, [], harmonics=4, base_frequency=0.18, starts=0, max_iterations=2,
                 progress=False, initial=first.trajectory)


def test_optimisation_bad_input():
    model = load_model("psm_simplified")
    limits = coordinate_limits(model)
    with pytest.raises(SolverError, match="harmonics must be at least 2"):
        optimise(model, limits, [], harmonics=0, progress=False)
    # two limits on the same joint that cannot both hold
    impossible = [*limits, type(limits[0])("q1_again", limits[0].coefficients, 0.0, 2.0, 3.0, 1.0)]
    with pytest.raises(SolverError, match="no feasible start"):
        optimise(model, impossible, [], harmonics=2, starts=1, max_iterations=2, progress=False)
    with pytest.raises(DescriptionError, match="unknown frame 'hand'"):
        cartesian_boxes(model, [{"frame": "hand", "lower": [0, 0, 0], "upper": [1, 1, 1]}])


def test_trajectory_file_round_trip_and_wrong_arm(tmp_path):
    traj = _random_rest(np.random.default_rng(4))
    path = save_trajectory(tmp_path / "t.yaml", traj, arm="psm", condition_number=12.5)
    back, meta = load_trajectory(path, arm="psm", joints=7)
    assert np.allclose(back.a, traj.a) and meta["condition_number"] == 12.5
    with pytest.raises(DataError, match="the trajectory is for the psm, not the mtm"):
        load_trajectory(path, arm="mtm")
    with pytest.raises(DataError, match="3 joints, the arm has 7"):
        load_trajectory(save_trajectory(tmp_path / "s.yaml", _random_rest(np.random.default_rng(5), n=3),
                                        arm="psm"), joints=7)


def test_mlse_grids_are_mirrored_and_respect_the_coupling():
    left, right = make_grid("MTML"), make_grid("mtmr")
    assert {s["estimated_joint"] for s in left["sweeps"]} == {1, 2, 3, 4, 5, 6}
    assert {s["direction"] for s in left["sweeps"]} == {"positive", "negative"}
    j1_left = np.degrees([p[0] for s in left["sweeps"] if s["estimated_joint"] == 1 for p in s["poses"]])
    j1_right = np.degrees([p[0] for s in right["sweeps"] if s["estimated_joint"] == 1 for p in s["poses"]])
    assert (j1_left.min(), j1_left.max()) == pytest.approx((-9, 40))
    assert (j1_right.min(), j1_right.max()) == pytest.approx((-40, 7))
    for sweep in left["sweeps"]:
        poses = np.degrees(np.array(sweep["poses"]))
        total = poses[:, 1] + poses[:, 2]
        assert np.all((total >= -11 - 1e-6) & (total <= 25 + 1e-6))
        moving = np.ptp(poses, axis=0) > 0
        assert list(np.flatnonzero(moving)) == [sweep["estimated_joint"] - 1]
        step = np.diff(poses[:, sweep["estimated_joint"] - 1])
        assert np.all(step > 0) if sweep["direction"] == "positive" else np.all(step < 0)


def test_grid_file_round_trip(tmp_path):
    path = save_grid(tmp_path / "g.yaml", make_grid("MTML"))
    assert load_grid(path, arm="MTML")["arm"] == "MTML"
    with pytest.raises(DataError, match="for the MTML, not the MTMR"):
        load_grid(path, arm="MTMR")


@pytest.mark.parametrize(("sweeps", "message"), [
    ([{"poses": [[0.0] * 7, [0.0] * 6]}], r"sweeps\[0\]\.poses must be"),  # ragged
    ([{"poses": [["a"] * 7]}], r"sweeps\[0\]\.poses must be"),
    (["not a mapping"], r"sweeps\[0\] must be a mapping"),
    ({"poses": []}, "sweeps must be a list"),
])
def test_a_malformed_grid_is_one_data_error(tmp_path, sweeps, message):
    import yaml

    from dvrk_ident_ros.excitation.files import GRID_FORMAT

    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"format": GRID_FORMAT, "arm": "MTML", "sweeps": sweeps}))
    with pytest.raises(DataError, match=message):
        load_grid(path, arm="MTML")


SHIPPED = sorted((REPO_ROOT / "config" / "trajectories").glob("*.yaml"))


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_trajectories_pass_check(path, capsys):
    arm = yaml.safe_load(path.read_text())["arm"]
    assert cli.main(["trajectory", "check", "--arm", arm, str(path)]) == 0
    assert "all limits respected" in capsys.readouterr().out


def test_shipped_grids_match_the_generator():
    for side in ("MTML", "MTMR"):
        shipped = load_grid(REPO_ROOT / "config" / "grids" / f"{side.lower()}_gc_grid.yaml", arm=side)
        assert shipped["sweeps"] == make_grid(side)["sweeps"]


def test_cli_optimize_writes_a_trajectory_that_check_accepts(tmp_path, capsys):
    """The CLI's path end to end, with a tiny search (the bench runs the defaults)."""
    out = tmp_path / "psm.yaml"
    assert cli.main(["trajectory", "optimize", "--arm", "psm_simplified", "--harmonics", "3", "--starts", "3",
                     "--iterations", "8", "--workers", "0", "--quiet", "--seed", "5", "--out", str(out)]) == 0
    summary = capsys.readouterr().out
    assert "explorations: best" in summary and "of 3; 0 starts failed" in summary
    assert yaml.safe_load(out.read_text())["arm"] == "psm"
    assert cli.main(["trajectory", "check", "--arm", "psm_simplified", str(out)]) == 0
    assert "all limits respected" in capsys.readouterr().out
