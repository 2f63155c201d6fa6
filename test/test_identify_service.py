"""/identify writes only under its own output_directory, reads only files and directories, and names arms
canonically: one service process, refused requests first (nothing written anywhere), then a cheap OLS fit
into a nested directory."""
from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.ros


def _tree(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _small_recording(path: Path) -> Path:
    """One period of a synthetic PSM recording at 100 Hz, as WPI CSV (about 550 rows: a fit in < 1 s)."""
    from dvrk_ident_ros.identify.synthetic import plausible_parameters, random_fourier, synthetic_recording
    from dvrk_ident_ros.model.arm_model import load_model

    model = load_model("psm")
    rng = np.random.default_rng(21)
    parameters = plausible_parameters(model, rng)
    trajectory = random_fourier(model, rng, base_frequency=0.18, amplitude=0.3)  # this seed excites all of them
    data, _ = synthetic_recording(model, parameters, trajectory, rate=100.0, duration=trajectory.period)
    np.savetxt(path, np.hstack([data.q, data.qd, data.tau]), delimiter=",")
    return path


def test_requests_touch_only_what_they_may(ros_env, tmp_path: Path):
    from dvrk_ident_ros.jobs.launcher import NodeProcess, ros_environment
    from dvrk_ident_ros.ros.clients import ArmClient

    outside = tmp_path / "outside"
    base = outside / "lab" / "identification"  # the node's output_directory; `../..` is `outside`
    outside.mkdir()
    (outside / "keep.txt").write_text("untouched\n")
    escape_target = tmp_path / "escape_target"
    escape_target.mkdir()
    data = _small_recording(tmp_path / "psm_run.csv")
    elsewhere = Path(f"/tmp/elsewhere-{uuid.uuid4().hex}")
    ok = {"arm": "psm1", "method": "ols", "data_files": [str(data)], "data_format": "wpi-csv"}
    refused = [
        ({**ok, "output_directory": str(elsewhere)}, "absolute paths are not accepted"),
        ({**ok, "output_directory": "../.."}, "outside it"),
        ({**ok, "output_directory": "../../escaped"}, "outside it"),
        ({**ok, "output_directory": "link/inner"}, "outside it"),
        ({**ok, "arm": "suj", "output_directory": "x"}, "unknown arm 'suj'"),
        ({**ok, "data_files": ["/dev/zero"], "output_directory": "x"}, "not a regular file or directory"),
    ]
    env = ros_environment(int(ros_env["ROS_DOMAIN_ID"]))
    with NodeProcess("identification_service", {"output_directory": str(base)}, log_dir=tmp_path / "logs",
                     env=env) as node, ArmClient("PSM1", "test_identify_paths") as client:
        before = _tree(outside)
        answers = [(client.identify(timeout=30.0, **fields), rule) for fields, rule in refused[:3]]
        refusals_created_the_base = base.exists()
        # a symbolic link inside the base that leads out of it: created now, so the base exists only for it
        base.mkdir(parents=True)
        (base / "link").symlink_to(escape_target, target_is_directory=True)
        answers += [(client.identify(timeout=30.0, **fields), rule) for fields, rule in refused[3:]]
        after_refusals = _tree(outside)
        good = client.identify(timeout=60.0, **ok, output_directory="runs/2024/first")
        assert node.running, node.tail(10)
        log = node.tail(200)
    for response, rule in answers:
        assert not response.success and rule in response.message, (rule, response.message)
        assert response.result_file == "" and response.solver_status == "not_run"
        assert "\n" not in response.message
    assert "relative path inside the service's output_directory" in answers[0][0].message
    assert not refusals_created_the_base
    assert not elsewhere.exists(), f"{elsewhere} was created"
    assert not (outside / "escaped").exists()
    assert list(escape_target.iterdir()) == []
    assert after_refusals == sorted([*before, "lab", "lab/identification", "lab/identification/link"])
    assert (outside / "keep.txt").read_text() == "untouched\n"

    assert good.success, good.message
    result = Path(good.result_file)
    assert result.is_file() and result.parent == base.resolve() / "runs" / "2024" / "first"
    assert result.name.startswith("PSM1-ols-"), result.name
    assert good.message.startswith("PSM1 ols: solver optimal"), good.message
    assert Path(good.report_file).is_file() and Path(good.report_file).parent == result.parent
    written = set(_tree(outside)) - set(after_refusals)
    assert all(p.startswith("lab/identification/runs") for p in written), written
    assert "/identify: ols for PSM1 on" in log and "PSM1 ols: solver optimal" in log, log
    assert "psm1" not in log.replace(str(tmp_path), ""), log
