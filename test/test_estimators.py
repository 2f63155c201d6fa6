"""The estimator registry is what the pipeline, the CLI, /identify and Identify.srv offer; one compensation
interface for the MLSE law and the identified model, built by the core's factory (no ROS)."""
from __future__ import annotations

import argparse
import re

import numpy as np
import pytest
from conftest import REPO_ROOT

from dvrk_ident_ros.app.cli import build_parser
from dvrk_ident_ros.errors import DataError, DvrkIdentError, SolverError
from dvrk_ident_ros.estimators import (
    COMPENSATIONS,
    DEFAULT_ESTIMATOR,
    DYNAMICS,
    ESTIMATORS,
    GRAVITY,
    compensation_names,
    estimator,
    estimator_names,
)
from dvrk_ident_ros.gc.fitting.fits import FITS
from dvrk_ident_ros.gc.model.params import GcParameters
from dvrk_ident_ros.gc.runtime.compensation import Compensation, load_compensation
from dvrk_ident_ros.gc.runtime.law import CompensationLaw
from dvrk_ident_ros.identify.least_squares import WEIGHTINGS
from dvrk_ident_ros.identify_request import plan_request


def _choices(*command: str) -> list[str]:
    """The ``--method`` choices of a dvrk-ident sub-command."""
    parser = build_parser()
    for name in command:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return list(next(a for a in parser._actions if a.dest == "method").choices)


def test_srv_comments_list_the_registry():
    text = (REPO_ROOT / "srv" / "Identify.srv").read_text()
    listed = re.findall(r"^#   (\w+) +(.+)$", text, flags=re.MULTILINE)
    assert listed == [(e.name, e.summary) for e in ESTIMATORS]
    field = re.search(r"^string method +# (.+)$", text, flags=re.MULTILINE).group(1)
    assert field == " | ".join(estimator_names()) + f' ("" = {DEFAULT_ESTIMATOR})'


def test_cli_offers_the_registry():
    assert _choices("identify") == list(estimator_names(DYNAMICS))
    assert _choices("gc", "fit") == list(estimator_names(GRAVITY))


def test_every_estimator_has_its_implementation():
    """The pipeline's weighting of each DYNAMICS estimator and the gc fit of each GRAVITY one exist."""
    for e in ESTIMATORS:
        if e.target == DYNAMICS:
            assert e.weighting in WEIGHTINGS, e
        else:
            assert e.target == GRAVITY and not e.physically_consistent, e
    assert set(FITS) == set(estimator_names(GRAVITY))
    assert {w for e in ESTIMATORS for w in [e.weighting] if w} == set(WEIGHTINGS)  # no weighting left unused
    assert all(set(c.estimators) <= set(estimator_names()) for c in COMPENSATIONS)


def test_unknown_method_names_the_registry():
    with pytest.raises(DvrkIdentError, match="known: sdp, wls, ols, mlse, slse"):
        estimator("lasso")
    with pytest.raises(DvrkIdentError, match=r"known: sdp, wls, ols\)"):
        estimator("mlse", DYNAMICS)
    assert estimator(" SDP ").name == "sdp"


def test_pipeline_refuses_a_gravity_estimator():
    from dvrk_ident_ros.identify.pipeline import identify
    from dvrk_ident_ros.model.arm_model import load_model

    with pytest.raises(SolverError, match="known: sdp, wls, ols"):
        identify(load_model("psm"), [], "mlse")


@pytest.mark.parametrize("method", ["sdp", "wls", "ols", "mlse", "SDP", ""])
def test_identify_request_takes_registry_methods(tmp_path, method):
    data = tmp_path / "data.csv"
    data.write_text("t\n")
    plan = plan_request(arm="MTML", method=method, data_files=[str(data)], output_base=tmp_path / "out")
    chosen = estimator(method or DEFAULT_ESTIMATOR)
    assert plan.method == chosen.name
    assert plan.gravity == (chosen.target == GRAVITY)
    assert plan.result_file("x").name.startswith("gc-" if plan.gravity else f"MTML-{chosen.name}-")


def test_identify_request_refuses_unknown_method(tmp_path):
    with pytest.raises(DvrkIdentError, match="unknown method 'lasso'"):
        plan_request(arm="MTML", method="lasso", data_files=["x"], output_base=tmp_path)


def _gc_file(tmp_path, arm: str = "MTML"):
    rng = np.random.default_rng(1)
    params = GcParameters(arm, "1", rng.normal(size=40), rng.normal(size=40), np.full(7, 2.0), np.full(7, -2.0))
    path = tmp_path / f"gc-{arm}.json"
    params.save(path)
    return path


def test_factory_builds_the_mlse_law(tmp_path):
    law = load_compensation(_gc_file(tmp_path), "MTML")
    assert isinstance(law, CompensationLaw) and isinstance(law, Compensation)
    assert (law.kind.name, law.kind.reported_as) == ("mlse", "mlse")
    with pytest.raises(DataError, match="gc parameters of MTML, this node drives MTMR"):
        load_compensation(_gc_file(tmp_path), "MTMR")
    with pytest.raises(DataError, match="parameter_file is empty"):
        load_compensation("", "MTML")


def test_model_compensation_is_a_compensation():
    from dvrk_ident_ros.gc.runtime.model_law import ModelCompensation
    from dvrk_ident_ros.sim.config import load_sim_config

    config = load_sim_config("psm")
    law = ModelCompensation(config.model, config.delta, np.full(config.model.dof, 1.0))
    assert isinstance(law, Compensation)
    assert (law.kind.name, law.kind.reported_as) == ("model", "dynamic")
    assert set(compensation_names()) == {"mlse", "model"}
