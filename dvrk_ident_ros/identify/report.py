"""Identification report: a text summary and per-joint plots of measured vs
predicted torque (like Wang 2019 figs. 8-9)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from dvrk_ident_ros.identify.results import IdentificationResult


def write_text_report(result: IdentificationResult, path: Path, test_errors: np.ndarray | None = None) -> Path:
    lines = [f"dvrk_ident identification report: {result.arm}, method {result.method}",
             f"data: {', '.join(result.data)}",
             f"filter: {result.filter}",
             f"solver: {result.solver}",
             "timings (s): " + ", ".join(f"{k} {v:.3f}" for k, v in result.timings.items()),
             "",
             "relative error per joint, ||tau - tau_hat|| / ||tau|| (%):",
             "  joint   training" + ("   test" if test_errors is not None else "")]
    for j, e in enumerate(result.errors["training"]):
        test = f"   {100 * test_errors[j]:5.1f}" if test_errors is not None else ""
        lines.append(f"  tau{j + 1}    {100 * e:6.1f}{test}")
    lines += ["", f"base parameters ({len(result.base_values)}):"]
    for value, text in zip(result.base_values, result.base_definitions, strict=True):
        lines.append(f"  {value:+.6g}  = {text}")
    lines += plausibility_lines(result.plausibility)
    path.write_text("\n".join(lines) + "\n")
    return path


def plausibility_lines(plausibility: dict) -> list[str]:
    """Per link: mass before (SDP) and after (plausible), prior mass, divergences, active bounds."""
    if not plausibility:
        return []
    lines = ["", f"plausible standard parameters: {plausibility.get('status')}"]
    if plausibility.get("status") != "optimal":
        return lines
    lines += [f"  prior: {plausibility['prior_source']}; largest relative base change "
              f"{plausibility['max_base_change']:.1e}; {plausibility['solve_seconds']:.2f} s",
              f"  total log-det divergence to the prior: SDP {plausibility['fit_total_divergence']:.4g}, "
              f"plausible {plausibility['total_divergence']:.4g}",
              "  link        mass SDP -> plausible (prior), kg   divergence SDP -> plausible   active bounds"]
    for link, v in plausibility["links"].items():
        lines.append(f"  {link:10s}  {v['fit_mass']:8.4g} -> {v['mass']:8.4g} ({v['prior_mass']:.3g})"
                     f"   {v['fit_divergence']:10.4g} -> {v['divergence']:8.4g}   "
                     + (", ".join(v["active_bounds"]) or "-"))
    return lines + relaxed_lines(plausibility.get("relaxed") or {})


def relaxed_lines(relaxed: dict) -> list[str]:
    """The plausible parameters within the fit's 95 % region (the ones ``export`` writes)."""
    if not relaxed:
        return []
    lines = ["", f"plausible within the fit's 95 % region (for simulators, export): {relaxed.get('status')}"]
    if relaxed.get("status") != "optimal":
        return lines
    lines += [f"  residual +{100 * relaxed['residual_increase']:.3g} % of the fit's (limit "
              f"{100 * relaxed['limit']:.3g} %); total divergence {relaxed['total_divergence']:.4g}",
              "  training error per joint, %: " + " ".join(
                  f"{100 * a:.2f}->{100 * b:.2f}"
                  for a, b in zip(relaxed["fit_errors"], relaxed["errors"], strict=True)),
              "  link        mass, kg   active bounds"]
    for link, v in relaxed["links"].items():
        lines.append(f"  {link:10s}  {v['mass']:8.4g}   " + (", ".join(v["active_bounds"]) or "-"))
    return lines


def plot_torques(t: np.ndarray, measured: np.ndarray, predicted: np.ndarray, path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = measured.shape[1]
    fig, grid = plt.subplots(n, 1, figsize=(9, 1.6 * n), sharex=True, squeeze=False)
    axes = grid[:, 0]
    for j, ax in enumerate(axes):
        ax.plot(t, measured[:, j], color="0.3", lw=1.0, label="measured (filtered)")
        ax.plot(t, predicted[:, j], color="tab:red", lw=1.0, label="predicted")
        ax.set_ylabel(f"tau{j + 1}")
        ax.grid(alpha=0.3)
    axes[0].legend(loc="upper right", fontsize=8)
    axes[-1].set_xlabel("time (s)")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
