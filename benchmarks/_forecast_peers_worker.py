"""The peer side of ``forecast_peers.py``: statsforecast and neuralforecast, one thread, in a subprocess.

Runs in the peers' environment (``benchmarks/requirements-peers.txt``), which need not have aaren_ts:
it reads ``<input>/train.csv`` (columns ``unique_id, ds, y``, ``ds`` an integer position) and writes,
per system, ``<output>/<system>.csv`` (``unique_id, ds, point, lo95, hi95``: the point forecast and the
95 % interval of every series and step) and ``<output>/timings.json`` (process CPU seconds, self and
children, and wall seconds of each system's fit and forecast; the package versions; the settings).

Each statsforecast model is first fitted once on two series, untimed, so that its numba compilation is
not counted as fitting time. Not meant to be run by hand: ``forecast_peers.py`` launches it.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_name] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402

import pandas as pd  # noqa: E402

LEVEL = 95
STATS_SYSTEMS = ("Naive", "SeasonalNaive", "AutoETS", "AutoTheta")


def cpu_seconds() -> float:
    """User and system CPU seconds of this process and its finished children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed(fn: Callable[[], pd.DataFrame]) -> tuple[pd.DataFrame, float, float]:
    """``fn()``, its CPU seconds and its wall seconds."""
    cpu, wall = cpu_seconds(), time.perf_counter()
    out = fn()
    return out, cpu_seconds() - cpu, time.perf_counter() - wall


def _stats_model(name: str, season: int):
    from statsforecast.models import AutoETS, AutoTheta, Naive, SeasonalNaive

    return {
        "Naive": lambda: Naive(),
        "SeasonalNaive": lambda: SeasonalNaive(season_length=season),
        "AutoETS": lambda: AutoETS(season_length=season),
        "AutoTheta": lambda: AutoTheta(season_length=season),
    }[name]()


def run_stats(name: str, df: pd.DataFrame, horizon: int, season: int) -> tuple[pd.DataFrame, float, float]:
    """One statsforecast model on every series (after an untimed warm-up fit on two series)."""
    from statsforecast import StatsForecast

    def forecast(data: pd.DataFrame) -> pd.DataFrame:
        sf = StatsForecast(models=[_stats_model(name, season)], freq=1, n_jobs=1)
        return sf.forecast(df=data, h=horizon, level=[LEVEL])

    first = df["unique_id"].drop_duplicates().iloc[:2]
    forecast(df[df["unique_id"].isin(first)])  # numba compilation, not timed
    out, cpu, wall = timed(lambda: forecast(df))
    columns = {name: "point", f"{name}-lo-{LEVEL}": "lo95", f"{name}-hi-{LEVEL}": "hi95"}
    return out.rename(columns=columns)[["unique_id", "ds", "point", "lo95", "hi95"]], cpu, wall


def nhits_settings(horizon: int, steps: int, seed: int) -> dict:
    """The NHITS configuration: neuralforecast's defaults but for these (the usual M4 choices)."""
    return {
        "h": horizon,
        "input_size": 3 * horizon,
        "max_steps": steps,
        "scaler_type": "robust",
        "start_padding_enabled": True,  # series shorter than input_size + h still give windows
        "random_seed": seed,
    }


def run_nhits(df: pd.DataFrame, horizon: int, steps: int, seed: int) -> tuple[pd.DataFrame, float, float]:
    """neuralforecast's NHITS, trained with the multi-quantile loss (median and the 95 % interval)."""
    import torch
    from neuralforecast import NeuralForecast
    from neuralforecast.losses.pytorch import MQLoss
    from neuralforecast.models import NHITS

    torch.set_num_threads(1)

    def fit_predict() -> pd.DataFrame:
        model = NHITS(
            **nhits_settings(horizon, steps, seed),
            loss=MQLoss(level=[LEVEL]),
            accelerator="cpu",
            enable_progress_bar=False,
            enable_model_summary=False,
            logger=False,
        )
        nf = NeuralForecast(models=[model], freq=1)
        nf.fit(df=df)
        return nf.predict()

    out, cpu, wall = timed(fit_predict)
    columns = {"NHITS-median": "point", f"NHITS-lo-{LEVEL}": "lo95", f"NHITS-hi-{LEVEL}": "hi95"}
    return out.rename(columns=columns)[["unique_id", "ds", "point", "lo95", "hi95"]], cpu, wall


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", type=Path, required=True, help="folder with train.csv")
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--horizon", type=int, required=True)
    parser.add_argument("--season", type=int, required=True)
    parser.add_argument("--nhits-steps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--systems", nargs="+", default=[*STATS_SYSTEMS, "NHITS"])
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    try:
        import neuralforecast
        import statsforecast
    except ImportError as error:
        sys.exit(
            f"the peers are not installed in {sys.executable} ({error}); create their environment with "
            "`python3 -m venv .venv-peers && .venv-peers/bin/pip install -r "
            "benchmarks/requirements-peers.txt`"
        )
    df = pd.read_csv(args.input / "train.csv", dtype={"unique_id": str})
    args.output.mkdir(parents=True, exist_ok=True)
    record: dict = {
        "versions": {
            "python": sys.version.split()[0],
            "pandas": pd.__version__,
            "statsforecast": statsforecast.__version__,
            "neuralforecast": neuralforecast.__version__,
        },
        "settings": {
            "horizon": args.horizon,
            "season": args.season,
            "n_series": int(df["unique_id"].nunique()),
            "nhits": nhits_settings(args.horizon, args.nhits_steps, args.seed),
            "level": LEVEL,
        },
        "systems": {},
    }
    for name in args.systems:
        if name == "NHITS":
            out, cpu, wall = run_nhits(df, args.horizon, args.nhits_steps, args.seed)
        else:
            out, cpu, wall = run_stats(name, df, args.horizon, args.season)
        out.to_csv(args.output / f"{name}.csv", index=False)
        record["systems"][name] = {"cpu_s": cpu, "wall_s": wall}
        print(f"{name:<14} CPU {cpu:8.1f} s  wall {wall:8.1f} s", flush=True)
        (args.output / "timings.json").write_text(json.dumps(record, indent=2))


if __name__ == "__main__":
    main()
