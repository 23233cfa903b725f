"""Long-horizon forecasting benchmark: AarenForecaster vs its Transformer twin, DLinear and the last value.

Protocol (``aaren_ts.datasets.protocol``, described in the documentation's dataset guide): input 96, T in
{96, 192, 336, 720}, train-only StandardScaler, every stride-1 test window (evaluated in batches through the
networks), MSE/MAE on the scaled data; the paper's figures come from ``aaren_ts.datasets.reference``.
AarenForecaster is fitted on train+validation with the validation part as its early-stopping tail. Also
measured:

* streaming: the forecasts AarenForecaster makes while streaming through the test period from its fitted
  state (thousands of steps past the end of training) against the fresh-window forecasts;
* the cost of ``partial_update`` of one observation at history 10^2 vs 10^5, and of sktime's
  ``LTSFTransformerForecaster.update`` on the same data.

Usage::

    python benchmarks/forecasting.py --quick          # ETTh1, T=96
    python benchmarks/forecasting.py                  # ETTh1, ETTh2, ETTm1, Weather x 4 horizons

Writes ``benchmarks/results/forecasting.md`` (or ``--output``) and plots beside it. The grid's cells are
independent, so they can run as separate processes (one ``--datasets X --horizons T --output
cells/X_TT.md`` each); ``--merge`` then combines those tables into one, with a summary plot::

    python benchmarks/forecasting.py --merge "cells/*.md" --output forecasting_grid.md

``--jobs N`` does both in one command: it runs the cells as N processes of this script and merges
their tables into ``--output`` (on one GPU, 16 cells at once fit in 80 GB only without the Weather
T=336/720 cells' Transformer twins; ``--jobs 8`` is safer)::

    python benchmarks/forecasting.py --jobs 8 --seeds 0 1 2 --output forecasting_grid.md

``--seeds 0 1 2`` reports means over several fits (the paper's figures are 5-seed means), and
``--param NAME=VALUE`` changes an AarenForecaster parameter for both backbones (``--param
local_norm=standard``); the table's model names show such parameters.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from _common import parse_param

from aaren_ts.datasets import DEFAULT_HORIZONS, DEFAULT_INPUT_LENGTH, load_series, sliding_windows
from aaren_ts.datasets.reference import ITRANSFORMER_MSE, PAPER_MSE, paper_mse
from aaren_ts.estimators._skorch import resolve_device
from aaren_ts.jobs.forecast import LAST_VALUE, evaluate_protocol, plot_protocol_example

#: The seasonal naive forecast's row (its period, the dataset's daily or yearly cycle, in the notes).
SEASONAL_NAIVE_ROW = "seasonal naive"

RESULTS = Path(__file__).resolve().parent / "results"


def dlinear_scores(name: str, horizon: int, data_home: str | None, epochs: int) -> tuple[float, float, float]:
    """sktime's LTSFDLinearForecaster trained on the training part; all test windows through its network."""
    from sktime.forecasting.ltsf import LTSFDLinearForecaster

    data, borders = load_series(name, data_home=data_home, download_if_missing=False)
    scaled = data.to_numpy()
    train = pd.DataFrame(scaled[: borders["train"][1]])
    model = LTSFDLinearForecaster(
        DEFAULT_INPUT_LENGTH, horizon, num_epochs=epochs, batch_size=32, in_channels=scaled.shape[1], lr=0.005
    )
    start = time.perf_counter()
    torch.manual_seed(0)
    model.fit(train, fh=list(range(1, horizon + 1)))
    fit_seconds = time.perf_counter() - start
    start, stop = borders["test"]
    histories, targets = sliding_windows(scaled[start:stop], DEFAULT_INPUT_LENGTH, horizon)
    net = model.network.eval()
    with torch.no_grad():
        pred = np.concatenate(
            [
                net(torch.as_tensor(histories[i : i + 512], dtype=torch.float32)).numpy()
                for i in range(0, len(histories), 512)
            ]
        )
    return float(((pred - targets) ** 2).mean()), float(np.abs(pred - targets).mean()), fit_seconds


def update_costs(data_home: str | None) -> list[str]:
    """Seconds per one-observation ``partial_update`` at history 10^2 and 10^5 (Aaren, Transformer twin),
    and per ``LTSFTransformerForecaster.update`` on the same data."""
    from aaren_ts import AarenForecaster

    rng = np.random.default_rng(0)
    long = pd.DataFrame(np.cumsum(rng.normal(size=(100_200, 1)), axis=0), columns=["y"])
    lines = ["| model | history 10^2 (ms) | history 10^5 (ms) | ratio |", "|---|---|---|---|"]
    for backbone in ("aaren", "transformer"):
        f = AarenForecaster(context_length=96, horizon=24, max_epochs=1, backbone=backbone, random_state=0)
        f.fit(long.iloc[:100])
        timings = {}
        for label, upto in (("short", 100), ("long", 100_000)):
            if upto > f.n_seen_:
                t0 = time.perf_counter()
                f.partial_update(long.iloc[f.n_seen_ : upto])
                print(f"{backbone}: streamed to {upto} in {time.perf_counter() - t0:.1f}s", flush=True)
            reps = []
            for i in range(20):
                row = long.iloc[upto + i : upto + i + 1]
                start = time.perf_counter()
                f.partial_update(row)
                reps.append(time.perf_counter() - start)
            timings[label] = 1e3 * float(np.median(reps))
            # step back is impossible (no history is kept): continue from where the stream is
            upto = f.n_seen_
        lines.append(
            f"| AarenForecaster({backbone}) | {timings['short']:.2f} | {timings['long']:.2f} | "
            f"{timings['long'] / timings['short']:.2f} |"
        )
    try:
        from sktime.forecasting.ltsf import LTSFTransformerForecaster

        # Its update refits on all data seen (update_params=True): history 10^2 and 10^3 only.
        timings = {}
        for label, n in (("short", 100), ("long", 1_000)):
            model = LTSFTransformerForecaster(seq_len=24, context_len=12, pred_len=24, num_epochs=1)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(long.iloc[:n], fh=list(range(1, 25)))
                start = time.perf_counter()
                model.update(long.iloc[n : n + 1])
                timings[label] = 1e3 * (time.perf_counter() - start)
        lines.append(
            f"| sktime LTSFTransformerForecaster.update (history 10^2 / **10^3**) | {timings['short']:.2f} | "
            f"{timings['long']:.2f} | {timings['long'] / timings['short']:.2f} |"
        )
    except Exception as err:  # report, do not fail the benchmark
        lines.append(f"| sktime LTSFTransformerForecaster.update | failed: {type(err).__name__}: {err} | | |")
    return lines


def _table(
    rows: list[tuple], stream_rows: list[str], device: str, window_stride: int = 1, part: str = "test"
) -> list[str]:
    """Markdown lines of the quality and streaming tables (``part="val"``: of the validation part,
    where the published test figures are not shown)."""
    scored = "test" if part == "test" else "validation"
    windows = (
        f"all stride-1 {scored} windows"
        if window_stride == 1
        else f"every {window_stride}th stride-1 {scored} window: a screening estimate, not the protocol"
    )
    if part == "val":
        windows += ", fitted on the training part alone"
    lines = [
        f"# Long-horizon forecasting (input {DEFAULT_INPUT_LENGTH}, {windows}, scaled data)",
        "",
        f"AarenForecaster device: {device}.",
        "",
        "| dataset | T | model | MSE | MAE | paper Aaren MSE | iTransformer MSE (published) | notes |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, horizon, model, mse, mae, notes in rows:
        paper = paper_mse(name, horizon) if part == "test" else None
        paper_s = f"{paper:.2f}" if paper is not None else "–"
        itransformer = ITRANSFORMER_MSE.get(name, {}).get(horizon) if part == "test" else None
        it_s = f"{itransformer:.3f}" if itransformer is not None else "–"
        lines.append(
            f"| {name} | {horizon} | {model} | {mse:.4f} | {mae:.4f} | {paper_s} | {it_s} | {notes} |"
        )
    if not stream_rows:  # nothing streamed (a screening run with --window-stride)
        return lines
    through = "validation and test" if part == "test" else "the validation part"
    lines += [
        "",
        "## Streaming vs fresh windows (AarenForecaster, aaren backbone)",
        "",
        f"Forecasts made from the state after streaming through {through} (one step per",
        "observation, from the end of training) vs forecasts from a fresh window of "
        f"{DEFAULT_INPUT_LENGTH} values.",
        "",
        "| dataset | T | fresh-window MSE | streaming MSE | streaming vs fresh | windows |",
        "|---|---|---|---|---|---|",
        *stream_rows,
    ]
    return lines


_DATASET_ORDER = ["ETTh1", "ETTh2", "ETTm1", "ETTm2", "Weather", "ECL"]


def _cell_key(row: str) -> tuple[int, int]:
    cells = [c.strip() for c in row.strip("|").split("|")]
    name = cells[0]
    order = _DATASET_ORDER.index(name) if name in _DATASET_ORDER else len(_DATASET_ORDER)
    return order, int(cells[1])


def merge_tables(paths: list[Path], out: Path) -> list[str]:
    """Combine per-cell tables written by this script into one table (and a plot beside it).

    Parameters
    ----------
    paths : list of Path
        Tables written by earlier runs (each with its quality and streaming sections).
    out : Path
        The combined table; the plot is written next to it with the suffix ``.png``.

    Returns
    -------
    list of str
        The lines written.
    """
    quality, stream, devices, titles = [], [], set(), set()
    for path in paths:
        section = "quality"
        for line in path.read_text().splitlines():
            if line.startswith("# "):
                titles.add(line)
            elif line.startswith("AarenForecaster device:"):
                devices.add(line.removeprefix("AarenForecaster device:").strip().rstrip("."))
            elif line.startswith("## "):
                section = "stream" if line.startswith("## Streaming") else "other"
            elif line.startswith("| ") and not line.startswith("| dataset") and section != "other":
                (quality if section == "quality" else stream).append(line)
    quality.sort(key=_cell_key)  # stable: keeps each cell's model order
    stream.sort(key=_cell_key)
    part = "val" if any("validation windows" in title for title in titles) else "test"
    lines = _table([], stream, ", ".join(sorted(devices)) or "unknown", part=part)
    if len(titles) == 1:  # the cells' common title (it names the windows scored)
        lines[0] = titles.pop()
    quality_end = next(i for i, line in enumerate(lines) if line.startswith("|---")) + 1
    lines[quality_end:quality_end] = quality
    out.write_text("\n".join(lines) + "\n")
    _plot_grid(quality, out.with_suffix(".png"))
    return lines


def _plot_label(model: str) -> str:
    """The plot's line of a table's model: one per backbone (the table names each cell's settings)
    and calendar."""
    if not (model.startswith("AarenForecaster(") and "," in model):
        return model
    calendar = next((part.strip() for part in model.split(",") if "calendar" in part), None)
    return model.split(",")[0] + (f", {calendar.removesuffix(')')})" if calendar else ")")


def _plot_grid(rows: list[str], path: Path) -> None:
    """MSE against horizon, one panel per dataset, one line per model and the paper's Aaren."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table: dict[str, dict[str, dict[int, float]]] = {}
    for row in rows:
        name, horizon, model, mse = [c.strip() for c in row.strip("|").split("|")][:4]
        table.setdefault(name, {}).setdefault(_plot_label(model), {})[int(horizon)] = float(mse)
    names = sorted(table, key=lambda n: _DATASET_ORDER.index(n) if n in _DATASET_ORDER else 99)
    fig, axes = plt.subplots(1, len(names), figsize=(3.6 * len(names), 3.4), squeeze=False)
    styles = {
        "AarenForecaster(aaren)": dict(color="tab:red", marker="o"),
        "AarenForecaster(transformer)": dict(color="tab:purple", marker="s", ls="--"),
        "LTSFDLinearForecaster": dict(color="tab:blue", marker="^", ls="-."),
        LAST_VALUE: dict(color="0.6", marker=".", ls=":"),
        SEASONAL_NAIVE_ROW: dict(color="0.3", marker="+", ls=":"),
        "NaiveForecaster(last)": dict(color="0.6", marker=".", ls=":"),  # its name in older tables
    }
    for ax, name in zip(axes[0], names, strict=True):
        for model, points in table[name].items():
            hs = sorted(points)
            ax.plot(hs, [points[h] for h in hs], label=model, **styles.get(model, {}))
        for published, label, marker in (
            (PAPER_MSE, "paper (Aaren)", "x"),
            (ITRANSFORMER_MSE, "iTransformer (published)", "*"),
        ):
            figures = published.get(name, {})
            hs = sorted(figures)
            if hs:
                ax.plot(hs, [figures[h] for h in hs], color="black", marker=marker, ls="none", label=label)
        ax.set_title(name)
        ax.set_xlabel("horizon T")
        ax.set_xticks(DEFAULT_HORIZONS)
    axes[0][0].set_ylabel("test MSE (scaled)")
    axes[0][-1].legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_cells_in_parallel(args: argparse.Namespace, datasets: list[str], horizons: list[int]) -> list[Path]:
    """Run every (dataset, horizon) cell as its own process of this script, ``args.jobs`` at a time.

    Each cell writes ``cells_<output stem>/<dataset>_T<horizon>.md`` (and a ``.log`` beside it) in
    ``benchmarks/results``; the tables of the cells that finished are returned for :func:`merge_tables`.
    """
    import subprocess
    import sys

    cell_dir = RESULTS / f"cells_{Path(args.output).stem}"
    cell_dir.mkdir(parents=True, exist_ok=True)
    common = ["--max-epochs", str(args.max_epochs), "--dlinear-epochs", str(args.dlinear_epochs)]
    common += ["--device", args.device, "--seeds", *map(str, args.seeds), "--skip-update-costs"]
    common += [f"--param={name}={json.dumps(value)}" for name, value in args.param]
    common += ["--skip-transformer"] if args.skip_transformer else []
    common += ["--data-home", args.data_home] if args.data_home else []
    common += ["--window-stride", str(args.window_stride), "--part", args.part]
    if args.calendar:
        common += ["--calendar", *args.calendar, "--calendar-harmonics", str(args.calendar_harmonics)]
    queue = [(name, horizon) for name in datasets for horizon in horizons]
    running: list[tuple[subprocess.Popen, str, Path]] = []
    tables, failed = [], []
    while queue or running:
        while queue and len(running) < args.jobs:
            name, horizon = queue.pop(0)
            table = cell_dir / f"{name}_T{horizon}.md"
            cmd = [sys.executable, __file__, "--datasets", name, "--horizons", str(horizon), *common]
            cmd += ["--output", str(table.relative_to(RESULTS))]
            log = table.with_suffix(".log").open("w")
            running.append(
                (subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), f"{name} T={horizon}", table)
            )
            log.close()
            print(f"started {name} T={horizon} (log: {table.with_suffix('.log')})", flush=True)
        time.sleep(1.0)
        for item in list(running):
            proc, label, table = item
            if proc.poll() is not None:
                running.remove(item)
                ok = proc.returncode == 0 and table.exists()
                (tables if ok else failed).append(table if ok else label)
                print(f"{'finished' if ok else 'FAILED'} {label} (exit {proc.returncode})", flush=True)
    if failed:
        print(f"cells that failed (see their logs): {', '.join(failed)}", flush=True)
    return sorted(tables)


def _finish(lines: list[str], out: Path, args: argparse.Namespace) -> None:
    """Append the update-cost section (unless skipped), write the table to ``out`` and print it."""
    if not args.skip_update_costs:
        lines = [*lines, "", "## Cost of one-observation updates (median of repeats)", ""]
        lines += update_costs(args.data_home)
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    print(f"\nwritten: {out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="ETTh1, T=96 only")
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--datasets", nargs="+", default=None)
    parser.add_argument("--horizons", type=int, nargs="+", default=None)
    parser.add_argument("--max-epochs", type=int, default=20)
    parser.add_argument("--dlinear-epochs", type=int, default=10)
    parser.add_argument("--skip-transformer", action="store_true")
    parser.add_argument("--skip-update-costs", action="store_true")
    parser.add_argument("--device", default="auto", help="torch device for AarenForecaster (default: auto)")
    parser.add_argument(
        "--seeds",
        type=int,
        nargs="+",
        default=[0],
        help="random_state of each AarenForecaster fit; the table reports the mean over them",
    )
    parser.add_argument(
        "--param",
        type=parse_param,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="another AarenForecaster parameter (VALUE read as JSON or a Python literal, else as a "
        "string), e.g. --param local_norm=standard; repeatable",
    )
    parser.add_argument(
        "--calendar",
        nargs="+",
        default=None,
        metavar="FEATURE",
        help="calendar features of the rows' times (e.g. hour_of_day) given to AarenForecaster as "
        "future-known covariates (aaren_ts.covariates.calendar_covariates)",
    )
    parser.add_argument(
        "--calendar-harmonics", type=int, default=1, help="sines and cosines per calendar feature"
    )
    parser.add_argument(
        "--part",
        choices=("test", "val"),
        default="test",
        help="'val': fit on the training part alone and score the validation part (what settings may be "
        "chosen on; DLinear is then not run)",
    )
    parser.add_argument(
        "--output", default="forecasting.md", help="file name of the table in benchmarks/results"
    )
    parser.add_argument(
        "--merge",
        nargs="+",
        default=None,
        metavar="TABLE",
        help="combine tables from earlier runs (file names or glob patterns in benchmarks/results, quoted) "
        "into --output and exit",
    )
    parser.add_argument(
        "--window-stride",
        type=int,
        default=1,
        help="score every K-th test window only: a cheaper estimate for screening settings, not the "
        "protocol (which is 1); streaming is then not scored",
    )
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="run the grid's (dataset, horizon) cells as this many parallel processes, then merge their "
        "tables into --output (mind GPU memory: a Weather T=720 cell can hold tens of GB)",
    )
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs must be at least 1, got {args.jobs}")
    if args.merge:
        out = RESULTS / args.output
        paths = sorted({path for pattern in args.merge for path in RESULTS.glob(pattern)} - {out})
        if not paths:
            parser.error(f"--merge: no table in {RESULTS} matches {args.merge}")
        print("\n".join(merge_tables(paths, out)))
        print(f"\nwritten: {out} and {out.with_suffix('.png').name}")
        return 0
    extra = dict(args.param)
    extra_label = "".join(f", {k}={v!r}" for k, v in extra.items())
    if args.calendar:
        extra_label += f", calendar {'+'.join(args.calendar)} x{args.calendar_harmonics}"
    extra_label += ", validation part" if args.part == "val" else ""
    datasets = args.datasets or (["ETTh1"] if args.quick else ["ETTh1", "ETTh2", "ETTm1", "Weather"])
    horizons = args.horizons or (list(DEFAULT_HORIZONS[:1]) if args.quick else list(DEFAULT_HORIZONS))
    RESULTS.mkdir(parents=True, exist_ok=True)
    torch.set_num_threads(max(1, torch.get_num_threads()))
    if args.jobs > 1:
        tables = run_cells_in_parallel(args, datasets, horizons)
        if not tables:
            print("no cell finished; nothing to merge")
            return 1
        out = RESULTS / args.output
        _finish(merge_tables(tables, out), out, args)
        return 0 if len(tables) == len(datasets) * len(horizons) else 1

    rows, stream_rows = [], []
    out = RESULTS / args.output
    out.parent.mkdir(parents=True, exist_ok=True)
    device = str(resolve_device(args.device))
    if device.startswith("cuda"):
        device += f" ({torch.cuda.get_device_name()})"
    for name in datasets:
        for horizon in horizons:
            for backbone in ["aaren"] + ([] if args.skip_transformer else ["transformer"]):
                results = [
                    evaluate_protocol(
                        name,
                        horizon,
                        data_home=args.data_home,
                        stream=backbone == "aaren",
                        window_stride=args.window_stride,
                        part=args.part,
                        calendar=args.calendar,
                        calendar_harmonics=args.calendar_harmonics,
                        backbone=backbone,
                        max_epochs=args.max_epochs,
                        random_state=seed,
                        device=args.device,
                        **extra,
                    )[0]
                    for seed in args.seeds
                ]
                result = results[0]
                mse = float(np.mean([r.mse for r in results]))
                mae = float(np.mean([r.mae for r in results]))
                if len(results) == 1:
                    r = result
                    notes = f"{r.fit_seconds:.0f}s fit, {r.epochs} ep, {r.eval_seconds:.0f}s eval"
                    notes += f", linear share {r.linear_share:.1f}" if r.linear_share > 0 else ""
                else:
                    notes = (
                        f"mean of seeds {args.seeds}: MSE {', '.join(f'{r.mse:.4f}' for r in results)}; "
                        f"{', '.join(str(r.epochs) for r in results)} ep"
                    )
                rows.append((name, horizon, f"AarenForecaster({backbone}{extra_label})", mse, mae, notes))
                print(rows[-1], flush=True)
                if backbone == "aaren":
                    rows.append((name, horizon, LAST_VALUE, result.naive_mse, result.naive_mae, ""))
                    rows.append(
                        (
                            name,
                            horizon,
                            SEASONAL_NAIVE_ROW,
                            result.seasonal_naive_mse,
                            result.seasonal_naive_mae,
                            f"sp={result.sp}",
                        )
                    )
                    if all(r.stream_mse is not None for r in results):
                        stream_mse = float(np.mean([r.stream_mse for r in results]))
                        stream_rows.append(
                            f"| {name} | {horizon} | {mse:.4f} | {stream_mse:.4f} | "
                            f"{100 * (stream_mse / mse - 1):+.2f} % | {result.n_windows} |"
                        )
                        print(stream_rows[-1], flush=True)
                    plot_protocol_example(RESULTS / f"forecast_{name}_T{horizon}.png", result)
            # DLinear scores every test window: not comparable with a screening or validation run
            if args.window_stride == 1 and args.part == "test":
                try:
                    mse, mae, fit_s = dlinear_scores(name, horizon, args.data_home, args.dlinear_epochs)
                    rows.append((name, horizon, "LTSFDLinearForecaster", mse, mae, f"{fit_s:.0f}s fit"))
                except Exception as err:  # report, do not fail the benchmark
                    rows.append(
                        (name, horizon, "LTSFDLinearForecaster", float("nan"), float("nan"), f"failed: {err}")
                    )
                print(rows[-1], flush=True)
            partial = _table(rows, stream_rows, device, args.window_stride, args.part)
            out.write_text("\n".join(partial) + "\n")  # partial results survive

    _finish(_table(rows, stream_rows, device, args.window_stride, args.part), out, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
