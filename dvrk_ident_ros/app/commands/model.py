"""``dvrk-ident model ...``: inspect an arm's model."""
from __future__ import annotations

import argparse
import json

from dvrk_ident_ros.files import add_command_group
from dvrk_ident_ros.model.arm_model import load_model


def _info(args: argparse.Namespace) -> int:
    model = load_model(args.arm, use_cache=not args.no_cache)
    report = {
        "arm": model.description.arm,
        "description": str(model.description.path),
        "standard_parameters": len(model.parameter_names),
        "base_parameters": model.base.count,
        "build_seconds": round(model.build.seconds, 4),
        "cache_used": model.build.cache_used,
        "cache_file": str(model.build.module_path),
        "parameter_names": list(model.parameter_names),
        "base_parameter_combinations": model.base_parameter_names,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"arm                  {report['arm']} ({report['description']})")
    print(f"standard parameters  {report['standard_parameters']}")
    print(f"base parameters      {report['base_parameters']}")
    print(f"build time           {report['build_seconds']:.3f} s "
          f"({'from cache' if model.build.cache_used else 'generated'}: {report['cache_file']})")
    print("parameters           " + " ".join(model.parameter_names))
    print("base parameters:")
    for i, text in enumerate(model.base_parameter_names):
        print(f"  b{i + 1:<3} {text}")
    return 0


def add_model_commands(sub: argparse._SubParsersAction) -> None:
    model_sub = add_command_group(sub, "model", "the arm's dynamic model")
    info = model_sub.add_parser("info", help="parameter counts, build time, cache use, names")
    info.add_argument("--arm", required=True, help="mtm, psm (mtml, mtmr, psm1..3) or a description .yaml")
    info.add_argument("--no-cache", action="store_true", help="regenerate the model even if cached")
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(handler=_info)
