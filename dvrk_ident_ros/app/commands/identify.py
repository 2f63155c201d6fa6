"""``dvrk-ident identify | predict | added-mass``."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from dvrk_ident_ros.data.loaders import FORMATS, load_dataset
from dvrk_ident_ros.estimators import DEFAULT_ESTIMATOR, DYNAMICS, estimator_names, method_help
from dvrk_ident_ros.jobs.offline import identification_job
from dvrk_ident_ros.model.arm_model import load_model

# The estimators (cvxpy, matplotlib) are imported by the handlers that use them,
# so that every other command starts quickly.
FORMAT_CHOICES = list(FORMATS)


def _identify(args: argparse.Namespace) -> int:
    lags = "auto" if args.torque_lags == "auto" else "none"
    outcome = identification_job(args.arm, args.data, args.method, Path(args.out), args.format, cutoff=args.cutoff,
                                 torque_lags=lags, plots=not args.no_plots, prior=args.prior)
    print(outcome.summary)
    print(f"parameters written to {outcome.result_file}")
    return 0


def _predict(args: argparse.Namespace) -> int:
    from dvrk_ident_ros.identify.pipeline import model_for, predict
    from dvrk_ident_ros.identify.results import IdentificationResult

    result = IdentificationResult.load(args.params)
    model = model_for(result)
    data = load_dataset(args.data, args.format, joints=model.dof, dvrk_from_motor=model.A)
    tau = predict(result, data, model)
    header = ",".join(f"tau{j + 1}" for j in range(model.dof))
    np.savetxt(args.out, tau, delimiter=",", header=header, comments="", fmt="%.9g")
    print(f"{len(tau)} predictions written to {args.out}", file=sys.stderr)
    return 0


def _added_mass(args: argparse.Namespace) -> int:
    from dvrk_ident_ros.identify.added_mass import estimate_added_mass

    model = load_model(args.arm)
    before, after = ([load_dataset(path, args.format, joints=model.dof, dvrk_from_motor=model.A) for path in paths]
                     for paths in (args.before, args.after))
    print(json.dumps(estimate_added_mass(model, args.link, before, after).as_dict(), indent=1))
    return 0


def add_identify_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("identify", help="identify an arm's dynamic parameters from recordings")
    p.add_argument("--arm", required=True)
    p.add_argument("--data", required=True, nargs="+", help="recording(s): bag directory, CSV or NPZ")
    p.add_argument("--format", choices=FORMAT_CHOICES, default=None, help="default: from the file")
    p.add_argument("--method", choices=estimator_names(DYNAMICS), default=DEFAULT_ESTIMATOR,
                   help=method_help(DYNAMICS))
    p.add_argument("--out", required=True, help="parameter file (JSON)")
    p.add_argument("--cutoff", type=float, default=None, help="low-pass cutoff, Hz (default: the arm's, 1.8 / 5.4)")
    p.add_argument("--torque-lags", choices=["auto", "none"], default="auto",
                   help="estimate the per-joint delay of the measured torque (default) or assume none")
    p.add_argument("--prior", default=None,
                   help="sdp: parameter file whose standard parameters (CAD, an earlier fit) the plausible "
                        "standard parameters are drawn to (default: a prior from the link geometry)")
    p.add_argument("--no-plots", action="store_true")
    p.set_defaults(handler=_identify)

    p = sub.add_parser("predict", help="predict motor torques of a recording from a parameter file")
    p.add_argument("--params", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--format", choices=FORMAT_CHOICES, default=None)
    p.add_argument("--out", required=True, help="CSV with header tau1,...,tauN, one row per input sample")
    p.set_defaults(handler=_predict)

    p = sub.add_parser("added-mass", help="estimate a mass taped on a link from two recordings")
    p.add_argument("--arm", required=True)
    p.add_argument("--link", required=True,
                   help="frame name of the link the weight is on, e.g. 2'' (or 2pp) for the PSM parallelogram")
    p.add_argument("--before", required=True, nargs="+", help="recording(s) without the weight")
    p.add_argument("--after", required=True, nargs="+", help="recording(s) with the weight, same trajectory")
    p.add_argument("--format", choices=FORMAT_CHOICES, default=None)
    p.set_defaults(handler=_added_mass)
