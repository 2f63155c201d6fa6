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
    path.write_text("\n".join(lines) + "\n")
    return path


def plot_torques(t: np.ndarray, measured: np.ndarray, predicted: np.ndarray, path: Path, title: str) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = measured.shape[1]
    fig, axes = plt.subplots(n, 1, figsize=(9, 1.6 * n), sharex=True)
    for j, ax in enumerate(np.atleast_1d(axes)):
        ax.plot(t, measured[:, j], color="0.3", lw=1.0, label="measured (filtered)")
        ax.plot(t, predicted[:, j], color="tab:red", lw=1.0, label="predicted")
        ax.set_ylabel(f"tau{j + 1}")
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].legend(loc="upper right", fontsize=8)
    np.atleast_1d(axes)[-1].set_xlabel("time (s)")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
