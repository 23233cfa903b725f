"""Many streams, one model: the cost of one new observation for each of 10 000 series.

A global AarenForecaster is fitted on M4 Hourly (one epoch: the cost of a step does not depend on the
training), then serves ``--streams`` series (M4 Hourly tiled, each started from its last
``--warmup`` observations). One call advances every stream by one observation and reads every forecast
(``partial_update_array`` + ``predict_array``; also through the pandas API, ``partial_update`` +
``predict``). Beside it, in the same run:

* (a) one series at a time through the same estimator (the same calls, one id each);
* (b) sktime's broadcasting (``ForecastByLevel``: one AarenForecaster per series) and its ``update``;
* (c) the Transformer twin (the same global forecaster with ``backbone="transformer"``, one network:
  three networks' KV caches for 2 000 streams outgrow a 24 GiB machine);
* the same Aaren forecaster without the online interval calibration (``interval_calibration=None``),
  and with one stream's value missing at every call (a gap sends the batch through the path that
  carries values over missing ones);
* the floors: the encoder's own step on the same batch, and the GEMM floor of the work (the model's
  matrix products for one token per stream, as plain sgemms of the same shapes).

Also one series, one observation (a forecaster fitted on one series): ``partial_update`` + ``predict``
and the array path, against the model's own compute for that step (the network's forward on one token
from the state, which includes the encoder step and the head). Memory per stream from the state's
tensors.

Usage::

    python benchmarks/many_streams.py --data-home $AAREN_TS_DATA
    python benchmarks/many_streams.py --data-home $AAREN_TS_DATA --device cuda   # the same on a GPU

Writes ``benchmarks/results/many_streams.md`` (``many_streams_cuda.md`` with ``--device cuda``).
"""

from __future__ import annotations

import argparse
import copy
import platform
import time
import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd
import torch
from _common import best_time, best_times, gemm_floor, markdown_table, results_dir

from aaren_ts import AarenForecaster
from aaren_ts.datasets import load_m4
from aaren_ts.nn.ensemble import member_networks

SMALL_FIT = {"max_epochs": 1, "device": "cpu", "random_state": 0}


def _tile(y: pd.DataFrame, n_streams: int, warmup: int) -> pd.DataFrame:
    """``n_streams`` series: M4's series repeated under new ids, each its last ``warmup`` steps."""
    tails = y.groupby(level=0, sort=False).tail(warmup)
    ids = tails.index.get_level_values(0).unique()
    pieces = []
    for k in range(-(-n_streams // len(ids))):
        piece = tails.copy()
        piece.index = piece.index.set_levels([f"{i}#{k}" for i in piece.index.levels[0]], level=0)
        pieces.append(piece)
    out = pd.concat(pieces)
    keep = out.index.get_level_values(0).unique()[:n_streams]
    return out[out.index.get_level_values(0).isin(keep)]


def _observations(
    f: AarenForecaster, rng: np.random.Generator, series_ids: list | None = None
) -> Callable[[], np.ndarray]:
    """New observations ``(n, 1)`` for the streams of ``f`` (or ``series_ids``), one per call: each
    stream's next forecast times a random factor close to 1. Like the M4 series they are positive: a
    value at or below zero is taken as missing on the log scale the defaults put them on, and every
    step would then time the path for gaps."""
    level = np.abs(f.predict_array(series_ids)[:, :1, 0]) + 1.0
    return lambda: level * (1.0 + rng.normal(0.0, 0.01, size=level.shape))


def _stepper(
    f: AarenForecaster, rng: np.random.Generator, series_ids: list | None = None, gap: bool = False
) -> Callable[[], None]:
    """One observation for every stream of ``f`` (or of ``series_ids``, in that order), then their
    forecasts: ``partial_update_array`` + ``predict_array``; with ``gap``, the first stream's value is
    missing at every call."""
    new = _observations(f, rng, series_ids)

    def run() -> None:
        values = new()
        if gap:
            values[0] = np.nan
        f.partial_update_array(values, series_ids=series_ids)
        f.predict_array(series_ids)

    return run


def _state_bytes(f: AarenForecaster) -> int:
    return sum(t.element_size() * t.nelement() for t in f.stream_state_tensors())


def _synced(fn: Callable[[], object], device: str) -> Callable[[], None]:
    """``fn`` followed by waiting for the GPU, so that a wall-clock timer measures its work there."""
    if not device.startswith("cuda"):
        return fn  # type: ignore[return-value]

    def run() -> None:
        fn()
        torch.cuda.synchronize()

    return run


def _encoder_step(f: AarenForecaster, device: str) -> Callable[[], object]:
    """The encoders' own steps on a token for every stream of ``f`` (from their states; one encoder per
    network of the ensemble)."""
    members = member_networks(f.net_.module_)
    states = f.engine_.state if len(members) > 1 else [f.engine_.state]
    rows = f.engine_.forecast.shape[0] * f.engine_.rows_per_series
    tokens = [torch.randn(rows, m.embed.out_features, device=device) for m in members]

    def run() -> object:
        with torch.no_grad():
            return [m.encoder.step(x, s) for m, x, s in zip(members, tokens, states, strict=True)]

    return run


def _ensemble_costs(
    data, sizes: list[int], n_streams: int, warmup: int, small_fit: dict, repeats: int, device: str
) -> list[list[object]]:
    """The cost of one observation against the ensemble's size (``n_estimators``): for each size, a
    global forecaster fitted on M4 Hourly serving ``n_streams`` streams (all in one call), and one
    fitted on one series (one observation); the state per stream. Every size's calls alternate."""
    rng = np.random.default_rng(1)
    single_series = data.y_train.xs(data.series_ids[0], level=0)
    streams = _tile(data.y_train, n_streams, warmup)
    calls: dict[str, Callable[[], object]] = {}
    state_bytes, n_streamed = {}, {}
    for k in sizes:
        params = {**small_fit, "n_estimators": k}
        panel = AarenForecaster(horizon=data.horizon, **params).fit(data.y_train)
        panel.partial_update(streams)
        n_all = n_streamed[k] = len(panel.series_ids_)
        state_bytes[k] = _state_bytes(panel) / n_all
        one = AarenForecaster(horizon=data.horizon, **params).fit(single_series)

        calls[f"all {k}"] = _synced(_stepper(panel, rng), device)
        calls[f"one {k}"] = _synced(_stepper(one, rng), device)
    seconds = best_times({n: fn for n, fn in calls.items() if n.startswith("all")}, repeats=repeats)
    seconds |= best_times({n: fn for n, fn in calls.items() if n.startswith("one")}, repeats=repeats * 20)
    first = sizes[0]
    per_stream = {k: seconds[f"all {k}"] / n_streamed[k] for k in sizes}
    rows = []
    for k in sizes:
        rows.append(
            [
                k,
                f"{per_stream[k] * 1e6:.2f}",
                f"{per_stream[k] / per_stream[first]:.2f}",
                f"{seconds[f'one {k}'] * 1e3:.3f}",
                f"{seconds[f'one {k}'] / seconds[f'one {first}']:.2f}",
                f"{state_bytes[k] / 1024:.1f}",
                f"{state_bytes[k] / state_bytes[first]:.2f}",
            ]
        )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--streams", type=int, default=10_000)
    parser.add_argument(
        "--transformer-streams", type=int, default=2_000, help="streams of the Transformer twin (KV caches)"
    )
    parser.add_argument("--warmup", type=int, default=192, help="observations each stream starts from")
    parser.add_argument("--one-at-a-time", type=int, default=200, help="series timed one call each (a)")
    parser.add_argument("--broadcast-series", type=int, default=10, help="series of the broadcast peer (b)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--device", default="cpu", help='"cpu" or "cuda": where the models run')
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--ensemble-sizes", type=int, nargs="*", default=[1, 2, 3, 5], help="n_estimators compared"
    )
    parser.add_argument("--ensemble-streams", type=int, default=2_000, help="streams of each ensemble size")
    parser.add_argument("--output", default=None, help="results folder")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message=".*remember_data.*", category=FutureWarning)
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    device = args.device
    small_fit = {**SMALL_FIT, "device": device}

    data = load_m4("Hourly", data_home=args.data_home)
    fh = list(range(1, data.horizon + 1))
    models = {}
    variants = {
        "aaren": {"backbone": "aaren"},
        "aaren, interval_calibration=None": {"backbone": "aaren", "interval_calibration": None},
        "transformer, n_estimators=1": {"backbone": "transformer", "n_estimators": 1},
    }
    for backbone, params in variants.items():
        start = time.perf_counter()
        f = AarenForecaster(horizon=data.horizon, **params, **small_fit).fit(data.y_train)
        count = args.transformer_streams if backbone.startswith("transformer") else args.streams
        streams = _tile(data.y_train, count, args.warmup)
        f.partial_update(streams)  # new series start their streams (no training)
        models[backbone] = f
        print(
            f"{backbone}: fitted, {len(f.series_ids_)} streams started in {time.perf_counter() - start:.0f}s"
        )

    rows: list[list[object]] = []
    n = args.streams
    # every batched call, the encoder's step and the GEMM floor timed in alternating rounds, so that
    # the ratios compare calls made under the same conditions of a noisy machine
    aaren = models["aaren"]
    n_aaren = len(aaren.series_ids_)
    calls: dict[str, Callable[[], object]] = {}
    for backbone, f in models.items():
        calls[backbone] = _synced(_stepper(f, rng), device)  # every stream, one observation each
    half = list(rng.permutation(np.array(aaren.series_ids_, dtype=object))[: n_aaren // 2])

    # any subset of the series, in any order: advanced in place
    calls["aaren, half"] = _synced(_stepper(aaren, rng, half), device)
    # one stream's value missing (a copy: a gap stays in a stream's window history for a context)
    calls["aaren, one gap"] = _synced(_stepper(copy.deepcopy(aaren), rng, gap=True), device)
    calls["encoder step"] = _synced(_encoder_step(aaren, device), device)
    linears = [m for m in aaren.net_.module_.modules() if isinstance(m, torch.nn.Linear)]
    calls["gemm floor"] = _synced(
        gemm_floor(linears, n_aaren * aaren.engine_.rows_per_series, device), device
    )
    seconds = best_times(calls, repeats=args.repeats)
    figures: dict[str, float] = {}
    for backbone, f in models.items():
        n_all = len(f.series_ids_)
        t = seconds[backbone]
        figures[f"{backbone} all"] = t / n_all
        state_kib = _state_bytes(f) / n_all / 1024
        label = f" (c) ({n_all} streams)" if backbone.startswith("transformer") else f" ({n_all} streams)"
        rows.append(
            [
                f"global {backbone}: partial_update_array + predict_array, all streams in one call{label}",
                f"{t / n_all * n * 1e3:.1f}*",
                f"{t / n_all * 1e6:.2f}",
                f"{state_kib:.1f}",
            ]
        )
    t = seconds["aaren, half"]
    rows.append(
        [
            f"global aaren: the same for a random half of the streams ({len(half)}, in random order)",
            f"{t / len(half) * n * 1e3:.1f}*",
            f"{t / len(half) * 1e6:.2f}",
            "",
        ]
    )
    t = seconds["aaren, one gap"]
    rows.append(
        [
            "global aaren: the same with one stream's value missing at every call",
            f"{t / n_aaren * n * 1e3:.1f}*",
            f"{t / n_aaren * 1e6:.2f}",
            "",
        ]
    )
    f = models["aaren"]
    ids = [i for i in f.series_ids_ if "#" in str(i)]
    times = f.series_cutoffs_.loc[ids].to_numpy()
    new = pd.DataFrame(
        {"y": _observations(f, rng, ids)()[:, 0]},
        index=pd.MultiIndex.from_arrays([ids, np.asarray(times) + 1], names=["series", "time"]),
    )
    start = time.perf_counter()
    f.partial_update(new)
    f.predict(fh)
    t_pandas = time.perf_counter() - start
    rows.append(
        [
            "global aaren: partial_update + predict (pandas panel), all streams in one call",
            f"{t_pandas * 1e3:.1f}",
            f"{t_pandas / n * 1e6:.2f}",
            "",
        ]
    )

    subset = ids[: args.one_at_a_time]
    new_each = {i: _observations(f, rng, [i]) for i in subset}

    def one_at_a_time() -> None:
        for i in subset:
            f.partial_update_array(new_each[i](), series_ids=[i])
            f.predict_array([i])

    t = best_time(one_at_a_time, repeats=1)
    rows.append(
        [
            f"(a) the same, one series per call ({len(subset)} calls)",
            f"{t / len(subset) * n * 1e3:.1f}*",
            f"{t / len(subset) * 1e6:.2f}",
            "",
        ]
    )

    from sktime.forecasting.compose import ForecastByLevel

    few = data.y_train[data.y_train.index.get_level_values(0).isin(data.series_ids[: args.broadcast_series])]
    broadcast = ForecastByLevel(AarenForecaster(horizon=data.horizon, **small_fit), groupby="local").fit(
        few, fh=fh
    )
    cut = few.groupby(level=0, sort=False).tail(1)
    nxt = pd.DataFrame(
        {"y": cut.iloc[:, 0].to_numpy() * (1.0 + rng.normal(0.0, 0.01, size=len(cut)))},
        index=pd.MultiIndex.from_arrays(
            [cut.index.get_level_values(0), cut.index.get_level_values(1) + 1], names=few.index.names
        ),
    )
    start = time.perf_counter()
    broadcast.update(nxt, update_params=False)
    broadcast.predict(fh)
    t = time.perf_counter() - start
    k = args.broadcast_series
    rows.append(
        [
            f"(b) sktime broadcasting (ForecastByLevel, {k} networks): update + predict",
            f"{t / k * n * 1e3:.0f}*",
            f"{t / k * 1e6:.0f}",
            "",
        ]
    )

    t_enc, t_gemm = seconds["encoder step"], seconds["gemm floor"]
    rows.append(
        [f"encoder step alone ({n_aaren} streams)", f"{t_enc * 1e3:.1f}", f"{t_enc / n_aaren * 1e6:.2f}", ""]
    )
    rows.append(
        [
            f"GEMM floor: the model's matrix products as sgemms ({n_aaren} tokens)",
            f"{t_gemm * 1e3:.1f}",
            f"{t_gemm / n_aaren * 1e6:.2f}",
            "",
        ]
    )
    ratio_all = figures["aaren all"] / (t_gemm / n_aaren)
    ratio_points = figures["aaren, interval_calibration=None all"] / (t_gemm / n_aaren)

    # one series, one observation
    single_series = data.y_train.xs(data.series_ids[0], level=0)
    one = AarenForecaster(horizon=data.horizon, **small_fit).fit(single_series)
    one_arrays = copy.deepcopy(one)  # its own stream, so that the two paths' timings can alternate
    position = [int(single_series.index[-1])]
    new_one, new_arrays = _observations(one, rng), _observations(one_arrays, rng)

    def pandas_step() -> None:
        position[0] += 1
        one.partial_update(pd.DataFrame({"y": new_one()[0]}, index=[position[0]]))
        one.predict(fh)

    def array_step() -> None:
        one_arrays.partial_update_array(new_arrays())
        one_arrays.predict_array()

    module = one.net_.module_
    state, history = one.engine_.take(torch.zeros(1, dtype=torch.long))
    x = torch.randn(1, 1, 1, device=device)

    def own_compute() -> None:
        with torch.no_grad():
            module(x, state=state, history=history, last_only=True, return_state=True)

    single = {"pandas": pandas_step, "array": array_step, "own": own_compute}
    single = best_times({k: _synced(fn, device) for k, fn in single.items()}, repeats=args.repeats * 20)
    t_pd, t_arr, t_own = single["pandas"], single["array"], single["own"]
    single_rows = [
        ["partial_update + predict (pandas)", f"{t_pd * 1e3:.3f}", f"{t_pd / t_own:.1f}"],
        ["partial_update_array + predict_array", f"{t_arr * 1e3:.3f}", f"{t_arr / t_own:.1f}"],
        [
            "the model's own compute (one token from the state, encoder step + head)",
            f"{t_own * 1e3:.3f}",
            "1.0",
        ],
    ]

    text = [
        f"# Many streams: one observation for each of {n} series (M4 Hourly tiled)",
        "",
        "Command: `python benchmarks/many_streams.py --data-home $AAREN_TS_DATA"
        + ("" if device == "cpu" else f" --device {device}")
        + "`",
        "",
        f"Machine: {platform.machine()}, torch {torch.__version__}, {args.threads} thread(s)"
        + (f", {torch.cuda.get_device_name()}" if device.startswith("cuda") else "")
        + "; "
        "default model sizes (d_model 64, 2 layers, an ensemble of three networks), fitted one epoch on "
        "M4 Hourly; each stream started "
        f"from {args.warmup} observations. Best of repeated calls; * scaled to {n} series from the "
        "per-series cost measured.",
        "",
        "## All streams",
        "",
        markdown_table(["what", f"ms for {n} series", "µs per series", "state KiB per series"], rows),
        "",
        f"The batched call (partial_update_array + predict_array, Aaren) costs {ratio_all:.2f}× the same-run "
        f"GEMM floor of its work with the defaults (the online interval calibration included: every stream "
        f"judges its last {data.horizon} forecasts at each step), {ratio_points:.2f}× with "
        "`interval_calibration=None`.",
        "",
        "## One series, one observation",
        "",
        markdown_table(["call", "ms", "× the model's own compute"], single_rows),
    ]
    if args.ensemble_sizes:
        ensemble_rows = _ensemble_costs(
            data, args.ensemble_sizes, args.ensemble_streams, args.warmup, small_fit, args.repeats, device
        )
        first = args.ensemble_sizes[0]
        text += [
            "",
            "## Ensemble size",
            "",
            f"The cost of one observation against `n_estimators` (every network streams with its own state): "
            f"a global forecaster serving {args.ensemble_streams} M4 streams in one call "
            "(partial_update_array + predict_array), and one fitted on one series, each fitted as above "
            f"with that many networks; ratios to `n_estimators={first}` in the same run (linear growth: "
            "the ratio equals the size or less).",
            "",
            markdown_table(
                [
                    "n_estimators",
                    "µs per stream (many)",
                    "ratio",
                    "ms (one series)",
                    "ratio",
                    "state KiB per stream",
                    "ratio",
                ],
                ensemble_rows,
            ),
        ]
    out = results_dir(args.output)
    name = "many_streams.md" if device == "cpu" else f"many_streams_{device.split(':')[0]}.md"
    (out / name).write_text("\n".join(text) + "\n")
    print("\n".join(text))


if __name__ == "__main__":
    main()
