"""``dvrk-ident export urdf|mjcf|kinematic-gc``: an identified arm as a simulator model, or as the dVRK console's
own gravity file (dvrk_ident_ros/export)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from dvrk_ident_ros.files import add_command_group


def _export(args: argparse.Namespace) -> int:
    from dvrk_ident_ros.export import FORMATS, relaxed_entry, tree_from_file

    tree, result = tree_from_file(args.params, args.variant, args.inertials)
    plausibility = getattr(result, "plausibility", None) or {}
    status = plausibility.get("status")
    relaxed = relaxed_entry(result) if args.inertials == "relaxed" else {}
    if relaxed:
        errors, fit = relaxed.get("errors") or [], relaxed.get("fit_errors") or []
        change = " ".join(f"{100 * a:.1f}->{100 * b:.1f}" for a, b in zip(fit, errors, strict=False))
        print(f"inertials: plausible within the fit's 95 % region (residual +{100 * relaxed['residual_increase']:.2g} %"
              f" of the fit's, limit {100 * relaxed['limit']:.2g} %; training error per joint, %: {change})")
        links = relaxed.get("links") or {}
    else:
        if status and status != "optimal":
            print(f"warning: {args.params}: plausible standard parameters not found ({status}); exporting the "
                  "SDP's own choice", file=sys.stderr)
        links = plausibility.get("links") or {}
    on_bounds = {link: entry["active_bounds"] for link, entry in links.items() if entry.get("active_bounds")}
    if on_bounds:
        print(f"warning: {args.params}: links on a bound of the identification (the data do not determine "
              "them): " + "; ".join(f"{k}: {', '.join(v)}" for k, v in on_bounds.items()), file=sys.stderr)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(FORMATS[args.export_command](tree))
    for line in tree.omitted:
        print(f"not exported: {line}", file=sys.stderr)
    print(f"{tree.arm}: {len(tree.links)} links, {len(tree.joints())} joints written to {out}")
    return 0


def _export_kinematic_gc(args: argparse.Namespace) -> int:
    from dvrk_ident_ros.export.kinematic_gc import kinematic_gc_export, write_kinematic_gc

    export = kinematic_gc_export(args.params, variant=args.variant, seed=args.seed, max_residual=args.max_residual)
    print(export.summary())
    out = write_kinematic_gc(export, args.out)
    print(f"{export.arm}: the console's gravity chain written to {out}; in the arm's configuration JSON: "
          f"\"kinematic_gc\": \"{out.resolve()}\", \"mounting_pitch\": {export.mounting_pitch:.6f} (dVRK 2.4)")
    return 0


def add_export_commands(sub: argparse._SubParsersAction) -> None:
    group = add_command_group(sub, "export", "an identified arm as a simulator model (URDF, MJCF) or as the "
                                             "dVRK console's own gravity file (kinematic_gc)")
    for name, what in (("urdf", "URDF with mimic joints (pinocchio, ROS)"),
                       ("mjcf", "MJCF with joint equalities and tendons (MuJoCo)")):
        p = group.add_parser(name, help=what)
        p.add_argument("--params", required=True, help="parameter file of an SDP identification (JSON)")
        p.add_argument("--out", required=True, help="file to write")
        p.add_argument("--variant", default=None, help="arm variant for the joint limits (e.g. MTMR)")
        p.add_argument("--inertials", default="relaxed", choices=("relaxed", "exact"),
                       help="relaxed (default): the plausible standard parameters within the fit's 95 %% region "
                            "where the file has them; exact: the file's own (they give its base parameters)")
        p.set_defaults(handler=_export)
    p = group.add_parser("kinematic-gc", help="the dVRK 2.4 console's own PSM/ECM gravity file (kinematic_gc)")
    p.add_argument("--params", required=True, help="parameter file of an SDP identification (JSON), best refitted "
                   "to static holds (dvrk-ident gc refit)")
    p.add_argument("--out", required=True, help="file to write (the console's physical-DH JSON)")
    p.add_argument("--variant", default=None, help="arm variant for the joint limits the poses are drawn in")
    p.add_argument("--seed", type=int, default=0, help="seed of the random poses (fit and check)")
    p.add_argument("--max-residual", type=float, nargs="+", default=None, metavar="N_m",
                   help="refuse when the fit's RMS residual exceeds this, per joint (N m, N for an insertion); "
                        "default: the RMS residual of the static holds the file was refitted to")
    p.set_defaults(handler=_export_kinematic_gc)
