"""`pip install .` on a machine without ROS (issue 33): a clean virtual environment, no ROS wheel, the
package's declared dependencies only (setup.cfg install_requires, versions from constraints.txt as
`make setup` takes them), then the ROS-free command line on the real recordings: identify on the WPI MTM
recording and gc fit on the CUHK folder, from a scratch directory as a user runs them."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from conftest import REPO_ROOT


def _tracked_files(destination: Path) -> None:
    """The repository's tracked files (a clone's content, without build/ or the venv) copied to
    ``destination``: pip builds in the source tree, and the checkout stays untouched."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = REPO_ROOT / name
        if source.is_file():
            target = destination / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)


def _base_python() -> str:
    """The interpreter the current environment was made from (a venv made from a venv is still a clean one)."""
    base = Path(sys.base_prefix) / "bin" / f"python{sysconfig.get_python_version()}"
    return str(base) if base.exists() else sys.executable


@pytest.mark.slow
@pytest.mark.shared_data
def test_pip_install_gives_a_ros_free_command_line(tmp_path, shared_dir):
    if not (REPO_ROOT / ".git").exists():
        pytest.skip("not a git checkout: the package's files are taken from git ls-files")
    source, venv, work = tmp_path / "source", tmp_path / "venv", tmp_path / "work"
    _tracked_files(source)
    subprocess.run([_base_python(), "-m", "venv", str(venv)], check=True)
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp"),
           "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_CONSTRAINT": str(REPO_ROOT / "constraints.txt")}
    for name in ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CACHE_DIR", "XDG_CACHE_HOME"):
        if name in os.environ:
            env[name] = os.environ[name]
    install = subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "."], cwd=source, env=env,
                             capture_output=True, text=True, timeout=900)
    assert install.returncode == 0, install.stdout + install.stderr
    python = str(venv / "bin" / "python")
    no_ros = subprocess.run([python, "-c", "import rclpy"], env=env, capture_output=True, text=True)
    assert no_ros.returncode != 0, "rclpy imports: the environment is not ROS-free"

    work.mkdir()
    shutil.copy(shared_dir / "data/wpi-identification/mtm/one_results.csv", work)
    os.symlink(shared_dir / "data/cuhk-mtm-gc/MTML-41878", work / "MTML-41878")
    command = str(venv / "bin" / "dvrk-ident")

    identify = subprocess.run([command, "identify", "--arm", "mtm", "--data", "one_results.csv", "--format",
                               "wpi-csv", "--method", "sdp", "--out", "mtm.json"],
                              cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert identify.returncode == 0, identify.stdout + identify.stderr
    assert "training error per joint (%)" in identify.stdout, identify.stdout
    result = json.loads((work / "mtm.json").read_text())
    assert (result["arm"], result["method"]) == ("mtm", "sdp"), {k: result[k] for k in ("arm", "method")}

    fit = subprocess.run([command, "gc", "fit", "--data", "MTML-41878/", "--arm", "MTML", "--serial", "41878",
                          "--out", "gc-MTML-41878.json"], cwd=work, env=env, capture_output=True, text=True,
                         timeout=600)
    assert fit.returncode == 0, fit.stdout + fit.stderr
    assert "MTML mlse with orders" in fit.stdout and "written to gc-MTML-41878.json" in fit.stdout, fit.stdout
    gc = json.loads((work / "gc-MTML-41878.json").read_text())
    assert gc["ARM_NAME"] == "MTML" and len(gc["GC_controller"]["gc_dynamic_params_pos"]) == 40, gc
