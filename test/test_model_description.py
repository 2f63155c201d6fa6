"""Arm descriptions: bad input gives one line naming the file and the field."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dvrk_ident_ros.errors import DescriptionError
from dvrk_ident_ros.model.description import config_directory, load_description


def _write_variant(tmp_path: Path, edit) -> Path:
    raw = yaml.safe_load((config_directory() / "mtm.yaml").read_text())
    edit(raw)
    path = tmp_path / "arm.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _error(path) -> str:
    with pytest.raises(DescriptionError) as info:
        load_description(path)
    message = str(info.value)
    assert "\n" not in message
    return message


def test_unknown_arm():
    message = _error("ecm2")
    assert "unknown arm 'ecm2'" in message and "mtm" in message


def test_aliases_resolve_to_the_builtin_descriptions():
    assert load_description("MTMR").arm == "mtm"
    assert load_description("psm2").arm == "psm"


def test_unreadable_file(tmp_path):
    assert "cannot read" in _error(tmp_path / "absent.yaml")
    (tmp_path / "bad.yaml").write_text("frames: [unclosed")
    assert "not valid YAML" in _error(tmp_path / "bad.yaml")


def test_unknown_antecedent(tmp_path):
    path = _write_variant(tmp_path, lambda raw: raw["frames"][2].update(parent="9"))
    message = _error(path)
    assert str(path) in message and "frames[2] (3).parent" in message and "'9'" in message


def test_singular_coupling(tmp_path):
    def edit(raw):
        raw["dvrk_from_motor"][2] = raw["dvrk_from_motor"][1]
    message = _error(_write_variant(tmp_path, edit))
    assert "dvrk_from_motor" in message and "singular" in message


@pytest.mark.parametrize("field", ["gravity", "motor_coordinates", "frames", "arm"])
def test_missing_top_level_field(tmp_path, field):
    message = _error(_write_variant(tmp_path, lambda raw: raw.pop(field)))
    assert field in message and "missing field" in message


def test_missing_frame_field(tmp_path):
    message = _error(_write_variant(tmp_path, lambda raw: raw["frames"][4].pop("theta")))
    assert "frames[4] (3'').theta: missing field" in message


def test_unknown_name_in_expression(tmp_path):
    message = _error(_write_variant(tmp_path, lambda raw: raw["frames"][0].update(d="-l_bad")))
    assert "frames[0] (1).d" in message and "l_bad" in message


def test_nonlinear_coordinate(tmp_path):
    message = _error(_write_variant(tmp_path, lambda raw: raw["coordinates"].update(q5="m5**2")))
    assert "coordinates.q5" in message and "not linear" in message


def test_a_new_arm_needs_no_code(tmp_path):
    """A two-link planar arm described in YAML alone builds a working model."""
    from dvrk_ident_ros.model.arm_model import load_model

    raw = {
        "arm": "planar2", "motor_coordinates": ["m1", "m2"], "dvrk_joint_names": ["a", "b"],
        "gravity": [0, -9.81, 0], "dvrk_from_motor": [[1, 0], [0, 1]], "constants": {"l1": 0.5},
        "coordinates": {"q1": "m1", "q2": "m2"},
        "frames": [
            {"name": "1", "parent": "base", "a": 0, "alpha": 0, "d": 0, "theta": "q1", "inertia": True,
             "friction": True},
            {"name": "2", "parent": "1", "a": "l1", "alpha": 0, "d": 0, "theta": "q2", "inertia": True},
        ],
    }
    path = tmp_path / "planar2.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    model = load_model(path, cache_dir=tmp_path / "cache")
    # planar 2R with gravity in the plane: ZZ1R, mx1R, my1R, ZZ2, mx2, my2, plus Fv1, Fc1, Fo1
    assert model.base.count == 9
    assert sorted(n.split()[0] for n in model.base_parameter_names) == sorted(
        ["Fv1", "Fc1", "Fo1", "L1zz", "l1x", "l1y", "L2zz", "l2x", "l2y"])


def test_variant_limits_mirror_the_right_wrist():
    d = load_description("mtm")
    left, right = d.limits_for("MTML"), d.limits_for("mtmr")
    assert left["q1"] == right["q1"]
    lo, hi, vmax = left["q5"]
    assert right["q5"] == (-hi, -lo, vmax)
    assert abs(left["q1"][0] - (-57 * 3.141592653589793 / 180)) < 1e-12
    with pytest.raises(DescriptionError, match="unknown variant 'ECM'"):
        d.limits_for("ECM")


def test_limit_on_an_unknown_joint(tmp_path):
    """A limits table naming a joint the arm does not have: the field and the name, not a KeyError."""
    def edit(raw):
        raw["limits"]["coordinates"]["q9"] = {"position": [-1.0, 1.0]}

    message = _error(_write_variant(tmp_path, edit))
    assert "limits.coordinates.q9" in message and "unknown coordinate 'q9'" in message
