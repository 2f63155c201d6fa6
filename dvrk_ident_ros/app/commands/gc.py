"""``dvrk-ident gc fit | check | orders | refit``."""
from __future__ import annotations

import argparse
import json

from dvrk_ident_ros.errors import DataError
from dvrk_ident_ros.estimators import DEFAULT_GRAVITY_ESTIMATOR, GRAVITY, estimator_names, method_help
from dvrk_ident_ros.files import add_command_group
from dvrk_ident_ros.gc.fitting.crossval import cross_validate, select_orders
from dvrk_ident_ros.gc.fitting.data import EFFORTS
from dvrk_ident_ros.gc.fitting.fits import FITS
from dvrk_ident_ros.gc.fitting.folds import held_out_folds
from dvrk_ident_ros.gc.fitting.loaders import load_poses
from dvrk_ident_ros.gc.fitting.mlse import DEFAULT_ORDERS, relative_errors
from dvrk_ident_ros.gc.fitting.static_refit import MIN_HOLD, REST_TOLERANCE, REST_WINDOW, SETTLE
from dvrk_ident_ros.gc.model.params import load_gc
from dvrk_ident_ros.gc.model.travel import DEFAULT_TRAVEL
from dvrk_ident_ros.gc.validation.bound import format_bound
from dvrk_ident_ros.gc.validation.validation import FixedFile, HeldOut, held_out_errors
from dvrk_ident_ros.jobs.offline import gc_fit_job, gravity_refit_job


def _orders(text: str | None) -> dict[int, int]:
    """"4,1,4,4,4,4" (joints 1..6) or None for the default."""
    if not text:
        return dict(DEFAULT_ORDERS)
    try:
        values = [int(x) for x in text.split(",")]
    except ValueError as exc:
        raise DataError(f"--orders: expected six integers, got {text!r}") from exc
    if len(values) != 6:
        raise DataError(f"--orders: expected six integers (joints 1-6), got {len(values)}")
    return dict(zip(range(1, 7), values, strict=True))


def _fit(args: argparse.Namespace) -> int:
    # no --orders: None, so that an estimator choosing its own orders (rmlse) does; MLSE takes Lin's
    orders = "auto" if args.orders == "auto" else _orders(args.orders) if args.orders else None
    outcome = gc_fit_job(args.data, args.arm, args.out, serial=args.serial or "unknown", method=args.method,
                         orders=orders, effort=args.effort, travel=args.travel)
    print(outcome.summary)
    print(f"written to {outcome.result_file}")
    return 0


def _check(args: argparse.Namespace) -> int:
    params = load_gc(args.params)
    data = load_poses(args.data, effort=args.effort)
    errors = relative_errors((params.theta_pos, params.theta_neg), data, by_direction=True)
    report = {f"joint{i}": {d: round(100 * errors[(i, d)], 2) for d in ("pos", "neg") if (i, d) in errors}
              for i in range(1, 7)}
    out = {"params": str(args.params), "version": params.version, "relative_rms_error_percent": report}
    if args.sweep_folds > 0:
        out["held_out"] = _held_out_report(args, params, data)
    print(json.dumps(out, indent=1))
    return 0


def _percent(result: HeldOut) -> dict:
    row = {f"joint{i}": round(100 * float(e), 2) for i, e in enumerate(result.per_joint(), start=1)}
    row["mean"] = round(100 * result.mean(), 2)
    row.update({f"mean_{family}": round(100 * result.mean(family), 2) for family in ("sweeps", "far", "cross")})
    return row


def _held_out_report(args: argparse.Namespace, params, data) -> dict:
    """The held-out protocol (gc/validation/validation.py): the estimator refitted on each fold beside the file,
    which is fixed and only evaluated on each fold's held-out poses."""
    folds = held_out_folds(data, args.sweep_folds, args.far)
    fit = FITS[args.method]
    ours = held_out_errors(lambda d: fit(d, None), data, folds)
    theirs = held_out_errors(FixedFile(params.theta_pos, params.theta_neg).fit, data, folds)
    bound = format_bound(data, folds)
    return {"protocol": f"{args.sweep_folds} folds of whole sweeps + the {100 * args.far:g} % farthest poses "
                        "per joint; relative RMS (%) of each joint's torque on its held-out poses, both directions "
                        "(mean_cross: each joint's torque at rest on the other joints' held-out sweeps, a guard)",
            "folds": len(folds),
            "estimator": {"method": args.method, "refitted": "on each fold", **_percent(ours)},
            "file": {"path": str(args.params), "refitted": "no (its held-out poses may have been in its fit)",
                     **_percent(theirs)},
            "format_bound": {"what": "the least figure any one gc file has on these poses and folds "
                                     "(gc/validation/bound.py), held-out poses seen: what the 40-parameter "
                                     "format leaves",
                             **{f"joint{i}": round(100 * float(e), 2) for i, e in enumerate(bound.per_joint, 1)},
                             "mean": round(100 * bound.mean(), 2)},
            "estimator_vs_file_mean_change_percent": round(100 * (ours.mean() / theirs.mean() - 1), 1)}


def _orders_cmd(args: argparse.Namespace) -> int:
    data = load_poses(args.data, effort=args.effort)
    orders, table = select_orders(data, folds=args.folds)
    default = cross_validate(data, DEFAULT_ORDERS, folds=args.folds)
    print("cross-validated relative RMS error (%) per joint and polynomial order (whole auxiliary values held out)")
    for i in sorted(table):
        row = "  ".join(f"{o}: {100 * e:5.1f}" for o, e in table[i].items())
        print(f"  joint {i}: {row}   -> {orders[i]} (default {DEFAULT_ORDERS[i]}: {100 * default[i]:.1f})")
    print("--orders " + ",".join(str(orders[i]) for i in range(1, 7)))
    return 0


def _refit(args: argparse.Namespace) -> int:
    outcome = gravity_refit_job(args.params, args.data, args.out, tolerance=args.tolerance, min_hold=args.min_hold,
                                settle=args.settle)
    print(outcome.summary)
    print(f"written to {outcome.result_file}")
    return 0


def _add_effort(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--effort", choices=EFFORTS, default="setpoint",
                        help="a bag's effort: setpoint (commanded, setpoint_js; Lin 2019's procedure, default) "
                             "or measured (measured_js)")


def add_gc_commands(sub: argparse._SubParsersAction) -> None:
    gsub = add_command_group(sub, "gc", "gravity compensation: MTM gc files (MLSE), an identified model's gravity "
                                        "refitted to static holds")
    p = gsub.add_parser("fit", help="fit a gc file (version 2.0) from pose-grid data")
    p.add_argument("--data", required=True,
                   help="pose-grid bag of the player and recorder, CUHK directory (Train_Joint<i>/...) or .npz")
    p.add_argument("--arm", default=None, help="MTML or MTMR (default: from the data path)")
    p.add_argument("--serial", default=None)
    p.add_argument("--orders", default=None, help="polynomial orders of joints 1-6, e.g. 4,1,4,4,4,4, or auto")
    p.add_argument("--method", choices=estimator_names(GRAVITY), default=DEFAULT_GRAVITY_ESTIMATOR,
                   help=method_help(GRAVITY))
    p.add_argument("--out", default=None, help="default gc-<ARM>-<SN>.json")
    p.add_argument("--travel", type=float, default=DEFAULT_TRAVEL,
                   help=f"a bag's poses weighted by their cable's recorded state of this width (rad, default "
                        f"{DEFAULT_TRAVEL:g}; 0: by their sweep's direction, as the CUHK files are)")
    _add_effort(p)
    p.set_defaults(handler=_fit)
    p = gsub.add_parser("check", help="relative RMS error per joint and direction of a gc file on data, and the "
                                      "held-out protocol: an estimator refitted per fold beside the file")
    p.add_argument("--params", required=True, help="the gc file to evaluate (e.g. the original tool's)")
    p.add_argument("--data", required=True)
    p.add_argument("--method", choices=estimator_names(GRAVITY), default=DEFAULT_GRAVITY_ESTIMATOR,
                   help="the estimator refitted on each held-out fold")
    p.add_argument("--sweep-folds", type=int, default=5, help="folds of whole sweeps (0: no held-out report)")
    p.add_argument("--far", type=float, default=0.1, help="fraction of each joint's farthest poses held out")
    _add_effort(p)
    p.set_defaults(handler=_check)
    p = gsub.add_parser("orders", help="choose the polynomial orders by cross-validation")
    p.add_argument("--data", required=True)
    p.add_argument("--folds", type=int, default=5)
    _add_effort(p)
    p.set_defaults(handler=_orders_cmd)
    p = gsub.add_parser("refit", help="refit an identified parameter file's gravity to the static holds of a "
                                      "recording (the arm at rest at poses over its workspace; the PSM)")
    p.add_argument("--params", required=True, help="the identified parameter file (SDP: standard parameters)")
    p.add_argument("--data", required=True, help="a recording of the same arm (bag, CSV, NPZ) with static holds")
    p.add_argument("--out", default=None, help="default <params>-refit.json beside the parameter file")
    p.add_argument("--tolerance", type=float, default=REST_TOLERANCE,
                   help=f"at rest: every joint within this range (rad or m) over {REST_WINDOW:g} s (default "
                        f"{REST_TOLERANCE:g})")
    p.add_argument("--min-hold", type=float, default=MIN_HOLD, help=f"s at rest for a hold (default {MIN_HOLD:g})")
    p.add_argument("--settle", type=float, default=SETTLE,
                   help=f"s left out at each hold's start (default {SETTLE:g})")
    p.set_defaults(handler=_refit)
