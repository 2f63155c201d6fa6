"""Two generations of the patient side share arm names (PSM1, ECM): DVRK_IDENT_GENERATION says which is meant,
as the dVRK console's "generation" does (arm/registry.py)."""
from __future__ import annotations

import pytest

from dvrk_ident_ros.arm.registry import arm_spec, canonical_arm, known_arms, selected_generation
from dvrk_ident_ros.errors import DvrkIdentError


def test_an_arm_name_means_the_selected_generation_s_family(monkeypatch):
    monkeypatch.delenv("DVRK_IDENT_GENERATION", raising=False)
    assert selected_generation() == "classic"
    assert arm_spec("PSM1").model == "psm" and arm_spec("psm2").family == "PSM"
    monkeypatch.setenv("DVRK_IDENT_GENERATION", "Si")
    assert selected_generation() == "si"
    assert arm_spec("psm1").model == "psm_si" and arm_spec("PSM3").generation == "si"
    assert arm_spec("ECM").family == "ECM_SI"
    monkeypatch.setenv("DVRK_IDENT_GENERATION", "classic")
    assert arm_spec("ecm").family == "ECM_CLASSIC" and arm_spec("ECM").model == "ecm_classic"
    monkeypatch.setenv("DVRK_IDENT_GENERATION", "si")
    assert arm_spec("MTML").family == "MTM"  # one generation has it: that one
    assert canonical_arm("psm1") == "PSM1" and known_arms().count("PSM1") == 1


def test_a_family_or_model_name_needs_no_generation(monkeypatch):
    monkeypatch.delenv("DVRK_IDENT_GENERATION", raising=False)
    assert arm_spec("psm_si").family == "PSM_SI" and arm_spec("PSM_SI").model == "psm_si"
    assert arm_spec("psm").family == "PSM"


def test_an_unknown_generation_is_one_clear_error(monkeypatch):
    monkeypatch.setenv("DVRK_IDENT_GENERATION", "s")
    with pytest.raises(DvrkIdentError, match="DVRK_IDENT_GENERATION='s': one of classic, si"):
        arm_spec("PSM1")


def test_a_family_named_as_an_arm_is_refused(monkeypatch, tmp_path):
    """An arm name means a family by the generation (ECM: ECM_CLASSIC or ECM_SI); a family or a model of the same
    name would be found first whatever the generation, so the registry refuses it with the reason."""
    from pathlib import Path

    from dvrk_ident_ros.arm.registry import known_arms
    from dvrk_ident_ros.model.description import DescriptionError

    planar = (Path(__file__).resolve().parent / "arms" / "planar.yaml").read_text()
    (tmp_path / "planar.yaml").write_text(planar.replace("family: PLANAR", "family: PLANAR1"))
    monkeypatch.setenv("DVRK_IDENT_ARM_PATH", str(tmp_path))
    with pytest.raises(DescriptionError, match="PLANAR1 names this family or model and an arm of PLANAR1"):
        known_arms()
