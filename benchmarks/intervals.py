"""Forecast intervals of AarenForecaster on the long-horizon protocol: coverage, pinball loss, CRPS.

Protocol (``aaren_ts.datasets.protocol``): input 96, horizon T, train-only StandardScaler, fitted on
train+validation with the validation part as the early-stopping tail (as ``benchmarks/forecasting.py``).
Scored on the test period, on the scaled data, over every horizon step and channel:

* **fresh windows**: every stride-``--window-stride`` test window encoded from scratch; the network's
  Gaussian intervals (there is no stream to calibrate);
* **streaming**: the fitted state streams through the test period one observation at a time
  (``partial_update_array``) and forecasts after each, with the online calibration
  (``interval_calibration="aci"``, the default) and without it (the same weights and states).

Columns: empirical coverage of the 80 % and 95 % central intervals, their mean width, the mean pinball
loss over the quantiles 0.025, 0.1, 0.5, 0.9, 0.975 (checked against sktime's ``PinballLoss`` on a
sample of windows in the same run), and the CRPS of the Gaussian forecast (closed form; streaming with
calibration has no single distribution, so its CRPS is left out). The point MSE is the mean's.

**Drift**: a seasonal series whose noise level doubles, then falls to a quarter of its level in
``fit``, while it streams; the coverage and width of the 90 % interval (one step ahead) with and
without the online calibration, and a plot of them (``intervals_drift.png``).

Usage::

    python benchmarks/intervals.py --data-home $AAREN_TS_DATA            # ETTh1 and Weather, T=96
    python benchmarks/intervals.py --datasets ETTh1 --window-stride 4     # quicker

Writes ``benchmarks/results/intervals.md``, ``intervals.png`` (a streamed stretch with its intervals) and
``intervals_drift.png``.
"""

from __future__ import annotations

import argparse
import copy
import platform
import time
import warnings

import numpy as np
import pandas as pd
import torch
from _common import markdown_table, results_dir
from scipy.special import ndtri
from scipy.stats import norm

from aaren_ts import AarenForecaster
from aaren_ts.datasets import DEFAULT_INPUT_LENGTH
from aaren_ts.jobs.forecast import _protocol_data, protocol_test_windows

QUANTILES = (0.025, 0.1, 0.5, 0.9, 0.975)
COVERAGES = (0.8, 0.95)


def gaussian_crps(y: np.ndarray, loc: np.ndarray, std: np.ndarray) -> float:
    """Mean CRPS of Gaussian forecasts (Gneiting and Raftery's closed form)."""
    z = (y - loc) / std
    return float(np.mean(std * (z * (2.0 * norm.cdf(z) - 1.0) + 2.0 * norm.pdf(z) - 1.0 / np.sqrt(np.pi))))


def pinball(y: np.ndarray, quantiles: np.ndarray) -> float:
    """Mean pinball loss over the last axis of ``quantiles`` (one per level of :data:`QUANTILES`)."""
    levels = np.asarray(QUANTILES)
    diff = y[..., None] - quantiles
    return float(np.mean(np.maximum(levels * diff, (levels - 1.0) * diff)))


def interval_scores(y: np.ndarray, quantiles: np.ndarray) -> dict[str, float]:
    """Coverage and width of the central intervals, from quantiles ``(..., len(QUANTILES))``."""
    out = {}
    for coverage in COVERAGES:
        lower = quantiles[..., QUANTILES.index(round(0.5 - coverage / 2, 3))]
        upper = quantiles[..., QUANTILES.index(round(0.5 + coverage / 2, 3))]
        out[f"cov{int(coverage * 100)}"] = float(np.mean((y >= lower) & (y <= upper)))
        out[f"width{int(coverage * 100)}"] = float(np.mean(upper - lower))
    out["pinball"] = pinball(y, quantiles)
    return out


def check_pinball_against_sktime(y: np.ndarray, quantiles: np.ndarray) -> float:
    """sktime's PinballLoss on the first window (``(T, C)`` values), beside :func:`pinball`'s."""
    from sktime.performance_metrics.forecasting.probabilistic import PinballLoss

    horizon, channels = y.shape
    columns = [f"c{c:03d}" for c in range(channels)]  # names that sort in column order
    y_true = pd.DataFrame(y, columns=columns)
    pred = pd.DataFrame(
        quantiles.reshape(horizon, -1),
        columns=pd.MultiIndex.from_product([columns, list(QUANTILES)]),
    )
    theirs = float(PinballLoss(multioutput="uniform_average")(y_true, pred))
    ours = pinball(y, quantiles)
    if not np.isclose(theirs, ours, rtol=1e-9):
        raise AssertionError(f"pinball loss {ours} differs from sktime's PinballLoss {theirs}")
    return theirs


def drift_rows(out_dir, seed: int) -> list[list[str]]:
    """Stream a series whose noise level changes after ``fit``; the 90 % one-step interval's coverage."""
    rng = np.random.default_rng(seed)
    n_fit, n_stream = 2000, 3000
    noise = np.r_[np.full(n_fit + 1000, 0.5), np.full(1000, 1.0), np.full(1000, 0.125)]
    t = np.arange(n_fit + n_stream)
    y = pd.Series(10 + 3 * np.sin(2 * np.pi * t / 24) + noise * rng.normal(size=len(t)), name="y")
    hits, bounds = {}, {}
    for calibration in ("aci", None):
        f = AarenForecaster(
            horizon=24, context_length=48, interval_calibration=calibration, random_state=seed
        )
        f.fit(y[:n_fit])
        q = np.empty((n_stream, 2))
        for i in range(n_stream):
            q[i] = f.predict_quantiles_array([0.05, 0.95])[0, 0, 0]
            f.partial_update_array(y.to_numpy()[None, n_fit + i : n_fit + i + 1, None])
        truth = y.to_numpy()[n_fit:]
        hits[calibration] = (truth >= q[:, 0]) & (truth <= q[:, 1])
        bounds[calibration] = q
    rows = []
    parts = (("noise as in fit", 0), ("noise doubled", 1000), ("noise a quarter of fit's", 2000))
    for label, start in parts:
        part = slice(start, start + 1000)
        width = {k: float(np.mean(np.diff(bounds[k][part], axis=1))) for k in bounds}
        rows.append(
            [
                "drift (simulated), 90 % one step ahead",
                label,
                "1000",
                "–",
                "–",
                f"{100 * hits['aci'][part].mean():.1f} (uncalibrated {100 * hits[None][part].mean():.1f})",
                "–",
                f"{width['aci']:.3f} ({width[None]:.3f})",
                "–",
                "–",
            ]
        )
    _plot_drift(out_dir / "intervals_drift.png", y.to_numpy()[n_fit:], bounds, hits, noise[n_fit:])
    return rows


def _plot_drift(path, truth, bounds, hits, noise) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot (pip install 'aaren_ts[plot]')")
        return
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 6), sharex=True)
    t = np.arange(len(truth))
    for label, key, color in (("calibrated (aci)", "aci", "tab:blue"), ("uncalibrated", None, "tab:orange")):
        top.plot(t, np.diff(bounds[key], axis=1)[:, 0], color=color, lw=0.8, label=label)
    top.plot(t, 2 * ndtri(0.95) * noise, color="black", ls="--", lw=0.8, label="the noise's own 90 % width")
    top.set_ylabel("width of the 90 % interval")
    top.set_title(
        "One-step-ahead 90 % intervals while the noise level changes (x2 at step 1000, x1/8 at 2000)"
    )
    top.legend(loc="upper right", fontsize=8)
    window = 200
    for label, key, color in (("calibrated (aci)", "aci", "tab:blue"), ("uncalibrated", None, "tab:orange")):
        rolling = np.convolve(hits[key].astype(float), np.ones(window) / window, mode="valid")
        bottom.plot(t[window - 1 :], 100 * rolling, color=color, label=label)
    bottom.axhline(90, color="gray", ls="--", lw=0.8)
    bottom.set_ylabel(f"coverage, last {window} steps (%)")
    bottom.set_xlabel("steps after fit")
    bottom.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--datasets", nargs="*", default=["ETTh1", "Weather"])
    parser.add_argument("--horizon", type=int, default=96)
    parser.add_argument("--window-stride", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--output", default=None, help="results folder")
    parser.add_argument("--skip-drift", action="store_true", help="no simulated drift section")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    if args.threads:
        torch.set_num_threads(args.threads)
    out_dir = results_dir(args.output)
    z_levels = ndtri(np.asarray(QUANTILES))
    rows, stretches = [], {}
    for name in args.datasets:
        scaled, borders, columns, _ = _protocol_data(name, args.data_home, False)
        train_stop, val_stop = borders["train"][1], borders["val"][1]
        fit_part = pd.DataFrame(scaled[:val_stop], columns=[str(c) for c in columns])
        forecaster = AarenForecaster(
            horizon=args.horizon,
            context_length=DEFAULT_INPUT_LENGTH,
            validation_fraction=(val_stop - train_stop) / val_stop,
            random_state=args.seed,
        )
        start = time.perf_counter()
        forecaster.fit(fit_part)
        fit_seconds = time.perf_counter() - start
        print(f"{name}: fitted in {fit_seconds:.0f} s", flush=True)

        histories, targets = protocol_test_windows(scaled, borders, args.horizon)
        histories, targets = histories[:: args.window_stride], targets[:: args.window_stride]
        loc, std = forecaster.predict_windows(histories, return_std=True)
        fresh_q = loc[..., None] + std[..., None] * z_levels
        check_pinball_against_sktime(targets[0], fresh_q[0])
        rows.append(
            _row(
                name,
                "fresh windows (network's Gaussian)",
                targets,
                loc,
                fresh_q,
                gaussian_crps(targets, loc, std),
            )
        )

        # streaming through the test period: the forecast after observation i targets rows i+1 .. i+T
        n_test = borders["test"][1] - val_stop
        later = scaled[val_stop : val_stop + n_test - 1]
        uncalibrated = copy.deepcopy(forecaster)
        uncalibrated.engine_.calibration = None  # the same weights and states, intervals as the network's
        for label, model in (
            ("streaming, calibrated (aci)", forecaster),
            ("streaming, uncalibrated", uncalibrated),
        ):
            start = time.perf_counter()
            quantiles = np.empty((len(later), args.horizon, len(columns), len(QUANTILES)))
            for i, row in enumerate(later):
                model.partial_update_array(row[None, None, :])
                quantiles[i] = model.predict_quantiles_array(QUANTILES)[0]
            seconds = time.perf_counter() - start
            truth = np.lib.stride_tricks.sliding_window_view(scaled[val_stop + 1 :], args.horizon, axis=0)
            truth = truth[: len(later)].transpose(0, 2, 1)  # (i, T, C): rows i+1 .. i+T after the cutoff
            full = len(truth)
            crps = None
            if model.engine_.calibration is None:
                std_stream = (quantiles[..., QUANTILES.index(0.975)] - quantiles[..., 2]) / ndtri(0.975)
                crps = gaussian_crps(truth, quantiles[:full, ..., 2], std_stream[:full])
            rows.append(_row(name, label, truth, quantiles[:full, ..., 2], quantiles[:full], crps))
            stretches[(name, label)] = (
                scaled[val_stop + 1 : val_stop + 1 + full, -1],
                quantiles[:full, 0, -1],
            )
            print(f"{name}: {label}: {len(later)} steps in {seconds:.0f} s", flush=True)

    if not args.skip_drift:
        rows.extend(drift_rows(out_dir, args.seed))
        print(rows[-3:], flush=True)
    header = [
        "dataset",
        "intervals",
        "windows",
        "MSE",
        "cov 80 %",
        "cov 95 %",
        "width 80",
        "width 95",
        "pinball",
        "CRPS",
    ]
    command = "python benchmarks/intervals.py --data-home $AAREN_TS_DATA"
    if args.window_stride != 1:
        command += f" --window-stride {args.window_stride}"
    text = [
        f"# Forecast intervals, T={args.horizon} (seed {args.seed})",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {platform.machine()}, torch {torch.__version__}, {torch.get_num_threads()} thread(s). "
        "Scaled data; coverage and pinball loss over every window, horizon step and channel; the pinball "
        "loss is the mean over the quantiles " + ", ".join(str(q) for q in QUANTILES) + " (equal to sktime's "
        "`PinballLoss` on a sample, checked in the run); CRPS of the Gaussian forecast in closed form.",
        "",
        markdown_table(header, rows),
        "",
    ]
    (out_dir / "intervals.md").write_text("\n".join(text))
    print("\n".join(text))
    if stretches:
        _plot(out_dir / "intervals.png", stretches)


def _row(name, label, truth, loc, quantiles, crps) -> list[str]:
    scores = interval_scores(truth, quantiles)
    return [
        name,
        label,
        str(len(truth)),
        f"{float(np.mean((truth - loc) ** 2)):.4f}",
        f"{100 * scores['cov80']:.1f}",
        f"{100 * scores['cov95']:.1f}",
        f"{scores['width80']:.3f}",
        f"{scores['width95']:.3f}",
        f"{scores['pinball']:.4f}",
        "–" if crps is None else f"{crps:.4f}",
    ]


def _plot(path, stretches) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot (pip install 'aaren_ts[plot]')")
        return
    names = sorted({name for name, _ in stretches})
    fig, axes = plt.subplots(len(names), 1, figsize=(11, 3.2 * len(names)), squeeze=False)
    for ax, name in zip(axes[:, 0], names, strict=True):
        truth, q = stretches[(name, "streaming, calibrated (aci)")]
        _, q_raw = stretches[(name, "streaming, uncalibrated")]
        span = slice(len(truth) - 500, len(truth))
        t = np.arange(len(truth))[span]
        ax.fill_between(
            t, q[span, 0], q[span, -1], color="tab:blue", alpha=0.25, label="95 % calibrated (aci)"
        )
        ax.fill_between(
            t, q[span, 1], q[span, -2], color="tab:blue", alpha=0.35, label="80 % calibrated (aci)"
        )
        ax.plot(t, q_raw[span, 0], color="tab:orange", lw=0.8, label="95 % uncalibrated")
        ax.plot(t, q_raw[span, -1], color="tab:orange", lw=0.8)
        ax.plot(t, truth[span], color="black", lw=0.9, label="observed")
        ax.set_title(f"{name}, last channel: one-step-ahead intervals while streaming the test period")
        ax.legend(loc="upper left", fontsize=8, ncol=4)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")


if __name__ == "__main__":
    main()
