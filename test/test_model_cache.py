"""The generated model is cached by content: reused when unchanged, rebuilt otherwise."""
from __future__ import annotations

import json
import subprocess
import sys

import yaml
from conftest import REPO_ROOT

from dvrk_ident_ros.model.arm_model import load_model
from dvrk_ident_ros.model.description import config_directory


def test_second_load_uses_the_cache(tmp_path):
    first = load_model("psm", cache_dir=tmp_path)
    second = load_model("psm", cache_dir=tmp_path)
    assert (first.build.cache_used, second.build.cache_used) == (False, True)
    assert first.build.cache_key == second.build.cache_key
    assert list(second.base.independent) == list(first.base.independent)


def test_no_cache_regenerates(tmp_path):
    load_model("psm", cache_dir=tmp_path)
    assert not load_model("psm", cache_dir=tmp_path, use_cache=False).build.cache_used


def test_changed_description_gets_a_new_key(tmp_path):
    raw = yaml.safe_load((config_directory() / "psm.yaml").read_text())
    raw["constants"]["l_tool"] = 0.5
    path = tmp_path / "psm_long_tool.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    assert load_model(path, cache_dir=tmp_path).build.cache_key != load_model("psm", cache_dir=tmp_path).build.cache_key


def test_corrupt_cache_entry_is_rebuilt(tmp_path):
    model = load_model("psm", cache_dir=tmp_path)
    model.build.module_path.write_text("this is not python")
    again = load_model("psm", cache_dir=tmp_path)
    assert not again.build.cache_used
    assert again.regressor([0.1] * 7, [0.2] * 7, [0.3] * 7).shape == (1, 7, 115)


def test_model_info_command(tmp_path):
    env = {"DVRK_IDENT_CACHE": str(tmp_path), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO_ROOT)}
    cmd = [sys.executable, "-m", "dvrk_ident_ros.app.cli", "model", "info", "--arm", "mtm", "--json"]
    cold = json.loads(subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout)
    warm = json.loads(subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout)
    assert (cold["cache_used"], warm["cache_used"]) == (False, True)
    assert (warm["standard_parameters"], warm["base_parameters"]) == (122, 73)
    assert len(warm["parameter_names"]) == 122 and len(warm["base_parameter_combinations"]) == 73
    bad = subprocess.run([*cmd[:-3], "--arm", "suj"], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.strip().startswith("dvrk-ident model: error: unknown arm 'suj'")
