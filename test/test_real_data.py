"""Checks on the real dVRK recordings of ../shared (skipped where they are absent)."""
from __future__ import annotations

import numpy as np

from dvrk_ident_ros.gc.fitting.data import load_cuhk
from dvrk_ident_ros.gc.fitting.mlse import fit_mlse, relative_errors
from dvrk_ident_ros.gc.model.params import load_gc


def test_mlse_reproduces_the_original_tool_on_mtml_41878(shared_dir):
    root = shared_dir / "data" / "cuhk-mtm-gc" / "MTML-41878"
    data = load_cuhk(root)
    original = load_gc(root / "gc-MTML-41878.json")
    ours = relative_errors(fit_mlse(data), data)
    theirs = relative_errors((original.theta_pos, original.theta_neg), data)
    for i in range(1, 7):
        assert ours[(i, "both")] <= theirs[(i, "both")] + 0.005


def test_sdp_on_the_real_psm_recording(shared_dir):
    from dvrk_ident_ros.data.loaders import load_dataset
    from dvrk_ident_ros.identify.pipeline import identify
    from dvrk_ident_ros.model.arm_model import load_model

    model = load_model("psm")
    result = identify(model, [load_dataset(shared_dir / "data" / "wpi-identification" / "psm" / "one_results.csv")])
    assert result.solver["status"] == "optimal"
    assert result.solver["min_pseudo_inertia_eigenvalue"] >= -1e-9
    assert np.all(np.array(result.errors["training"]) < 0.35)
    assert result.standard is not None and max(abs(v) for k, v in result.standard.items() if k.startswith("L")) < 2.0
