"""``aaren-ts forecast``: train AarenForecaster and report MSE/MAE beside the paper's figures.

Without ``--dataset`` it runs on sktime's bundled airline series (no download) and compares the forecast
of the last ``--horizon`` months with the seasonal naive forecast (the value of the same month a year
earlier, :data:`SEASONAL_NAIVE`). With an ETT, Weather or ECL dataset from a data folder it follows the
long-horizon protocol of :mod:`aaren_ts.datasets.protocol` (input 96, train-only scaling, stride-1 test
windows, MSE/MAE on the scaled data), evaluates every test window in batches beside the last-value
forecast (:data:`LAST_VALUE`) and the paper's figure (:data:`aaren_ts.datasets.reference.PAPER_MSE`), and
also scores the forecasts the model makes while *streaming* through the validation and test periods
(one ``partial_update``-equivalent step per observation) against the fresh-window forecasts.

Plots need matplotlib, an optional extra (``aaren_ts[plot]``); without it the job prints its tables and
says so instead of drawing.
"""

from __future__ import annotations

import argparse
import copy
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from aaren_ts.estimators import format_fit_report

from ._common import add_common_arguments, estimator_options

__all__ = [
    "LAST_VALUE",
    "SEASONAL_NAIVE",
    "ProtocolResult",
    "add_arguments",
    "coverage_note",
    "evaluate_protocol",
    "plot_protocol_example",
    "protocol_seasonal_naive",
    "protocol_window_covariates",
    "run",
]

BUNDLED = ("airline",)
#: The months of a season of the airline series (monthly data, yearly pattern).
AIRLINE_SP = 12
#: Name of the airline baseline: each month forecast by the same month a year earlier.
SEASONAL_NAIVE = f"seasonal naive (sp={AIRLINE_SP})"
#: Name of the protocol's baseline: every step of the horizon forecast by the window's last value.
LAST_VALUE = "last value"
PLOT_HINT = "install aaren_ts[plot] for the plot"
#: Test windows scored at a time by :func:`evaluate_protocol` (bounds its memory at long horizons).
SCORE_BLOCK = 1024


@dataclass
class ProtocolResult:
    """Scores of one dataset/horizon run of the long-horizon protocol (on the scaled data).

    ``naive_mse`` and ``naive_mae`` score the last-value forecast (:data:`LAST_VALUE`),
    ``seasonal_naive_mse`` and ``seasonal_naive_mae`` the seasonal naive one
    (:func:`protocol_seasonal_naive`, period ``sp``).
    """

    dataset: str
    horizon: int
    mse: float
    mae: float
    naive_mse: float
    naive_mae: float
    seasonal_naive_mse: float
    seasonal_naive_mae: float
    sp: int
    n_windows: int
    fit_seconds: float
    eval_seconds: float
    stream_mse: float | None = None
    stream_mae: float | None = None
    epochs: int = 0
    linear_share: float = 0.0
    example: dict[str, Any] = field(default_factory=dict)


def _protocol_data(
    name: str, data_home: str | None, download_if_missing: bool = False
) -> tuple[np.ndarray, dict[str, tuple[int, int]], list, Any]:
    """The scaled series (train-only scaling), the protocol's borders, the column names and the
    rows' times.

    A thin layer over :func:`aaren_ts.datasets.load_series`.
    """
    from aaren_ts.datasets import load_series

    frame, borders = load_series(name, data_home=data_home, download_if_missing=download_if_missing)
    return frame.to_numpy(dtype=np.float64), borders, list(frame.columns), frame.index


def protocol_test_windows(
    scaled: np.ndarray, borders: dict[str, tuple[int, int]], horizon: int, part: str = "test"
) -> tuple:
    """Histories ``(W, L, C)`` and targets ``(W, T, C)`` of every stride-1 window of the test part
    (``part="val"``: of the validation part).

    :func:`aaren_ts.datasets.sliding_windows` of the part's rows, with the protocol's input length.
    """
    from aaren_ts.datasets import DEFAULT_INPUT_LENGTH, sliding_windows

    start, stop = borders[part]
    return sliding_windows(scaled[start:stop], DEFAULT_INPUT_LENGTH, horizon)


def protocol_window_covariates(
    covariates: np.ndarray, borders: dict[str, tuple[int, int]], horizon: int, part: str = "test"
) -> np.ndarray:
    """``(W, L + T, n)``: the covariates at the steps of each of :func:`protocol_test_windows`'
    windows and of its horizon (what :meth:`~aaren_ts.AarenForecaster.predict_windows` takes as ``X``)."""
    from aaren_ts.datasets import DEFAULT_INPUT_LENGTH, sliding_windows

    start, stop = borders[part]
    steps, after = sliding_windows(covariates[start:stop], DEFAULT_INPUT_LENGTH, horizon)
    return np.concatenate([steps, after], axis=1)


def protocol_seasonal_naive(
    scaled: np.ndarray,
    borders: dict[str, tuple[int, int]],
    horizon: int,
    sp: int,
    windows: np.ndarray | None = None,
    part: str = "test",
) -> np.ndarray:
    """The seasonal naive forecasts ``(W, T, C)`` of :func:`protocol_test_windows`' windows (or of
    those numbered ``windows`` only; ``part="val"``: of the validation part's windows): each step
    repeats the value of the last full cycle of ``sp`` steps before the window's end.

    Where ``sp`` exceeds the protocol's input length (Weather's daily cycle, 144 ten-minute steps, against
    96) that value lies before the window: the baseline reads the series' earlier rows, which the models
    are not given.
    """
    from aaren_ts.datasets import DEFAULT_INPUT_LENGTH

    start, stop = borders[part]
    ends = np.arange(start + DEFAULT_INPUT_LENGTH, stop - horizon + 1)  # each window's first target row
    if windows is not None:
        ends = ends[windows]
    steps = np.arange(horizon)
    back = sp * (steps // sp + 1)  # the same phase in the last cycle seen
    return scaled[ends[:, None] + steps - back]


class _ErrorSums:
    """Running sums of squared and absolute errors, for scoring forecasts block by block."""

    def __init__(self) -> None:
        self.squared = self.absolute = 0.0
        self.count = 0

    def add(self, pred: np.ndarray, target: np.ndarray) -> None:
        """Add the errors of ``pred`` against ``target`` (``pred`` broadcast to ``target``'s shape)."""
        error = np.broadcast_to(pred, target.shape) - target
        self.squared += float((error**2).sum())
        self.absolute += float(np.abs(error).sum())
        self.count += error.size

    @property
    def mse(self) -> float:
        return self.squared / self.count

    @property
    def mae(self) -> float:
        return self.absolute / self.count


def evaluate_protocol(
    name: str,
    horizon: int,
    data_home: str | None = None,
    stream: bool = True,
    window_stride: int = 1,
    download_if_missing: bool = False,
    part: str = "test",
    calendar: Sequence[str] | None = None,
    calendar_harmonics: int = 1,
    **params: Any,
) -> tuple[ProtocolResult, Any]:
    """Fit AarenForecaster on train+validation (validation = early-stopping tail) and score the test part.

    Parameters
    ----------
    name : str
        Dataset name (``"ETTh1"``, ..., ``"Weather"``, ``"ECL"``).
    horizon : int
        Forecast horizon ``T``.
    data_home : str, optional
        Data folder (default ``$AAREN_TS_DATA``).
    stream : bool, default=True
        Also score the forecasts made while streaming through the scored part from the fitted state.
    window_stride : int, default=1
        Score every ``window_stride``-th test window only (a cheaper estimate for screening settings;
        the protocol is 1). Streaming is scored only with stride 1.
    download_if_missing : bool, default=False
        Download a missing file when upstream offers a direct address (ETT).
    part : {"test", "val"}, default="test"
        ``"val"``: fit on the training part alone (the forecaster cuts its own early-stopping tail,
        ``validation_fraction``) and score the validation part's windows instead; the test part is
        not read. What settings may be chosen on.
    calendar : sequence of str, optional
        Calendar features of the rows' times (:func:`aaren_ts.covariates.calendar_covariates`) given
        to the forecaster as future-known covariates, in ``fit`` and with every window.
    calendar_harmonics : int, default=1
        Harmonics of each calendar feature (``calendar_covariates``' ``harmonics``).
    **params
        AarenForecaster parameters (``context_length`` defaults to the protocol's input length, 96).

    Returns
    -------
    ProtocolResult, AarenForecaster
    """
    import pandas as pd

    from aaren_ts import AarenForecaster
    from aaren_ts.covariates import calendar_covariates
    from aaren_ts.datasets import DEFAULT_INPUT_LENGTH, get_dataset_info

    stride = int(window_stride)
    if stride < 1:
        raise ValueError(f"window_stride must be a positive integer, got {window_stride!r}")
    if part not in ("test", "val"):
        raise ValueError(f"part must be 'test' or 'val', got {part!r}")
    scaled, borders, columns, times = _protocol_data(name, data_home, download_if_missing)
    train_stop, val_stop = borders["train"][1], borders["val"][1]
    fit_stop = val_stop if part == "test" else train_stop
    fit_part = pd.DataFrame(scaled[:fit_stop], columns=[str(c) for c in columns])
    covariates = None
    if calendar:
        covariates = calendar_covariates(times, calendar, harmonics=calendar_harmonics).to_numpy()
    params.setdefault("context_length", DEFAULT_INPUT_LENGTH)
    if part == "test":
        params["validation_fraction"] = (val_stop - train_stop) / val_stop
    forecaster = AarenForecaster(horizon=horizon, **params)
    start = time.perf_counter()
    forecaster.fit(fit_part, X=None if covariates is None else pd.DataFrame(covariates[:fit_stop]))
    fit_seconds = time.perf_counter() - start
    histories, targets = protocol_test_windows(scaled, borders, horizon, part)
    histories, targets = histories[::stride], targets[::stride]
    window_covariates = None
    if covariates is not None:
        window_covariates = protocol_window_covariates(covariates, borders, horizon, part)[::stride]
    sp = get_dataset_info(name).sp
    window_ids = np.arange(0, len(targets) * stride, stride)
    model, naive, seasonal_naive = _ErrorSums(), _ErrorSums(), _ErrorSums()
    eval_seconds = 0.0
    # Scored in blocks of windows: at long horizons the forecasts of every window would not fit in
    # memory at once (Weather at T = 720: about 1.2 GB per (W, T, C) array in float64).
    for first in range(0, len(targets), SCORE_BLOCK):
        block = slice(first, first + SCORE_BLOCK)
        start = time.perf_counter()
        block_covariates = None if window_covariates is None else window_covariates[block]
        pred = forecaster.predict_windows(histories[block], X=block_covariates)
        eval_seconds += time.perf_counter() - start
        model.add(pred, targets[block])
        naive.add(histories[block][:, -1:], targets[block])  # the last value
        seasonal = protocol_seasonal_naive(scaled, borders, horizon, sp, windows=window_ids[block], part=part)
        seasonal_naive.add(seasonal, targets[block])
        if first <= len(targets) // 2 < first + SCORE_BLOCK:
            example = pred[len(targets) // 2 - first, :, -1]
    result = ProtocolResult(
        dataset=name,
        horizon=horizon,
        mse=model.mse,
        mae=model.mae,
        naive_mse=naive.mse,
        naive_mae=naive.mae,
        seasonal_naive_mse=seasonal_naive.mse,
        seasonal_naive_mae=seasonal_naive.mae,
        sp=sp,
        n_windows=len(targets),
        fit_seconds=fit_seconds,
        eval_seconds=eval_seconds,
        epochs=len(forecaster.net_.history),
        linear_share=float(forecaster.linear_share_),
    )
    if stream and stride == 1:
        # The fitted state has consumed rows [0, fit_stop); window i's history ends at row fit_stop-1+i.
        # A copy streams on through the scored part block by block (the returned forecaster stays as fitted).
        streamer = copy.deepcopy(forecaster)
        streamed = _ErrorSums()

        def covariate_rows(first: int, stop: int) -> pd.DataFrame | None:
            if covariates is None:
                return None
            return pd.DataFrame(covariates[first:stop], index=pd.RangeIndex(first, stop))

        ahead = covariate_rows(fit_stop, fit_stop + horizon)
        first_pred = streamer.predict(fh=list(range(1, horizon + 1)), X=ahead).to_numpy()[None]
        streamed.add(first_pred, targets[:1])
        for first in range(0, len(targets) - 1, SCORE_BLOCK):
            rows = np.arange(first, min(first + SCORE_BLOCK, len(targets) - 1)) + fit_stop
            later = pd.DataFrame(
                scaled[rows], index=pd.RangeIndex(rows[0], rows[-1] + 1), columns=fit_part.columns
            )
            known = covariate_rows(rows[0], rows[-1] + 1 + horizon)
            streamed.add(streamer.stream_forecasts(later, X=known), targets[rows - fit_stop + 1])
            streamer.partial_update(later, X=None if known is None else known.iloc[: len(later)])
        result.stream_mse, result.stream_mae = streamed.mse, streamed.mae
    last = len(targets) // 2
    result.example = {
        "history": histories[last, :, -1],
        "target": targets[last, :, -1],
        "pred": example,
        "column": columns[-1],
    }
    return result, forecaster


def plotting_available() -> bool:
    """Whether matplotlib can be imported (the optional extra ``aaren_ts[plot]``)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def _as_series(values: Any, start: int = 0) -> Any:
    """``values`` as a pandas Series: a Series as it is, an array indexed by step from ``start``."""
    import pandas as pd

    if isinstance(values, pd.Series):
        return values
    values = np.asarray(values)
    return pd.Series(values, index=pd.RangeIndex(start, start + len(values)))


def _plot(
    path: Path,
    title: str,
    history,
    target,
    pred,
    baseline=None,
    baseline_label: str = LAST_VALUE,
    interval: tuple[Any, Any, str] | None = None,
) -> None:
    """Draw history, truth, AarenForecaster's forecast (and a baseline's) into ``path``.

    Series are drawn against their own index (a ``PeriodIndex`` as timestamps); plain arrays against the
    step number, the target and forecasts right after the history. ``interval`` ``(lower, upper, label)``
    shades a forecast interval.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    def x_of(series: pd.Series) -> Any:
        index = series.index
        return index.to_timestamp() if isinstance(index, pd.PeriodIndex) else index

    n = len(history)
    curves = [
        (_as_series(history), "history", {"color": "0.3"}),
        (_as_series(target, n), "truth", {"color": "black"}),
        (_as_series(pred, n), "AarenForecaster", {"color": "tab:red"}),
    ]
    if baseline is not None:
        curves.append((_as_series(baseline, n), baseline_label, {"color": "tab:blue", "ls": "--"}))
    fig, ax = plt.subplots(figsize=(9, 3.5))
    if interval is not None:
        lower, upper, label = interval
        lower, upper = _as_series(lower, n), _as_series(upper, n)
        ax.fill_between(
            x_of(lower), lower.to_numpy(), upper.to_numpy(), color="tab:red", alpha=0.2, label=label
        )
    for series, label, style in curves:
        ax.plot(x_of(series), series.to_numpy(), label=label, **style)
    ax.set_title(title)
    if getattr(history, "name", None):
        ax.set_ylabel(str(history.name))
    ax.legend(loc="best", fontsize=8)
    if isinstance(x_of(curves[0][0]), pd.DatetimeIndex):
        fig.autofmt_xdate()
    else:
        ax.set_xlabel("time step")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_protocol_example(path: Path, result: ProtocolResult) -> None:
    """Plot the example test window of a protocol run: history, truth, forecast and the last value."""
    ex = result.example
    _plot(
        path,
        f"{result.dataset} ({ex['column']}, scaled), T={result.horizon}: one test window",
        ex["history"],
        ex["target"],
        ex["pred"],
        np.repeat(ex["history"][-1:], result.horizon),
        baseline_label=LAST_VALUE,
    )


def _save_plot(args: argparse.Namespace, path: Path, draw: Callable[[Path], None]) -> None:
    """``draw(path)`` when matplotlib is there, else say how to get it; print the outcome."""
    if not args.plot:
        print(f"plot: skipped ({PLOT_HINT})")
        return
    draw(path)
    print(f"plot: {path}")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``aaren-ts forecast``."""
    add_common_arguments(
        parser,
        dataset="airline",
        dataset_help="'airline' (ships with sktime, no download) or ETTh1, ETTh2, ETTm1, ETTm2, Weather, ECL",
        max_epochs=20,
        output="forecast_output",
        output_help="folder for the forecast plot(s)",
    )
    parser.add_argument(
        "--horizon",
        type=int,
        nargs="+",
        default=None,
        metavar="T",
        help="horizon(s) T (default: 12 for airline, 96 192 336 720 otherwise)",
    )


def coverage_note(n_inside: int, n: int, nominal: float, what: str = "steps", alpha: float = 0.05) -> str:
    """A plain warning when an interval covers clearly fewer of ``n`` truths than its nominal level, else "".

    "Clearly": were the coverage ``nominal``, as few as ``n_inside`` of ``n`` inside (or fewer) would
    happen with probability below ``alpha`` (the binomial lower tail), so a shortfall that a short test
    period explains by chance passes without comment.

    Parameters
    ----------
    n_inside : int
        How many truths fell inside their interval.
    n : int
        How many truths there were.
    nominal : float
        The interval's coverage level, in (0, 1).
    what : str, default="steps"
        What the truths are, for the message ("months").
    alpha : float, default=0.05
        The tail probability below which the shortfall is reported.

    Returns
    -------
    str
    """
    if n == 0:
        return ""
    chance = sum(math.comb(n, k) * nominal**k * (1 - nominal) ** (n - k) for k in range(n_inside + 1))
    if chance >= alpha:
        return ""
    return (
        f"  note: that is well below the nominal {nominal * 100:.0f} %: the intervals are too narrow on "
        f"this test period (were they right, {n_inside} or fewer of {n} {what} inside would happen "
        f"{chance:.1%} of the time)"
    )


def _run_airline(args: argparse.Namespace) -> int:
    import warnings

    import pandas as pd
    from sktime.datasets import load_airline
    from sktime.forecasting.naive import NaiveForecaster

    from aaren_ts import AarenForecaster

    y = load_airline()
    horizon = (args.horizon or [12])[0]
    train, test = y[:-horizon], y[-horizon:]
    fh = list(range(1, horizon + 1))
    # the defaults, but for the options given (--param)
    model = AarenForecaster(horizon=horizon, **estimator_options(args, AarenForecaster)).fit(train)
    pred = model.predict(fh=fh)
    band = model.predict_interval(fh=fh, coverage=0.9)
    lower, upper = band.iloc[:, 0].to_numpy(), band.iloc[:, 1].to_numpy()
    with warnings.catch_warnings():
        # sktime's FutureWarning about the coming default of its `remember_data` config, raised whenever a
        # sktime forecaster that keeps the old default is built or reset (NaiveForecaster here, in
        # __init__ and again in fit; AarenForecaster sets the config itself and raises none)
        warnings.filterwarnings(
            "ignore", message="The default of config ``remember_data``", category=FutureWarning
        )
        naive = NaiveForecaster(strategy="last", sp=AIRLINE_SP).fit(train).predict(fh=fh)
    truth = test.to_numpy()
    print_fit_report(model)
    print(f"airline: last {horizon} months forecast from the {len(train)} before")
    for label, p in (("AarenForecaster", pred), (SEASONAL_NAIVE, naive)):
        err = p.to_numpy() - truth
        print(f"airline T={horizon} {label:<24} MSE {np.mean(err**2):10.2f}  MAE {np.mean(np.abs(err)):7.2f}")
    n_inside = int(np.sum((truth >= lower) & (truth <= upper)))
    covered = n_inside / horizon
    print(f"airline T={horizon} AarenForecaster 90 % interval: covers {covered:.0%} of the test months")
    note = coverage_note(n_inside, horizon, 0.9, "months")
    if note:
        print(note)
    _save_plot(
        args,
        Path(args.output) / f"forecast_airline_{args.backbone}.png",
        lambda path: _plot(
            path,
            f"airline: {horizon}-month forecast",
            train.iloc[-48:],
            test,
            pd.Series(pred.to_numpy(), index=test.index),
            pd.Series(naive.to_numpy(), index=test.index),
            baseline_label=SEASONAL_NAIVE,
            interval=(
                pd.Series(lower, index=test.index),
                pd.Series(upper, index=test.index),
                "AarenForecaster 90 % interval",
            ),
        ),
    )
    return 0


def print_fit_report(model: Any, prefix: str = "") -> None:
    """Print what ``model``'s fit decided (:attr:`~aaren_ts.AarenForecaster.fit_report_`), a line a step."""
    print(f"{prefix}what the fit decided (fit_report_; --param 'skip_steps=[\"STEP\"]' switches one off):")
    print(format_fit_report(model.fit_report_), flush=True)


def run(args: argparse.Namespace) -> int:
    """Run the job; returns the exit status."""
    args.plot = plotting_available()
    if not args.plot:  # said before training, and again where the plot would be
        print(f"matplotlib is not installed: no plot will be drawn ({PLOT_HINT})", flush=True)
    if args.dataset.lower() in BUNDLED:
        return _run_airline(args)
    from aaren_ts import AarenForecaster
    from aaren_ts.datasets import DEFAULT_HORIZONS, DEFAULT_INPUT_LENGTH, get_dataset_info
    from aaren_ts.datasets.reference import paper_mse

    name = get_dataset_info(args.dataset).name
    horizons = args.horizon or list(DEFAULT_HORIZONS)
    print(
        f"{name}: input {DEFAULT_INPUT_LENGTH}, backbone {args.backbone}; MSE/MAE on scaled data, "
        "all test windows",
        flush=True,
    )
    columns = (
        ("T", 4),
        ("MSE", 7),
        ("MAE", 7),
        ("paper MSE", 9),
        ("stream MSE", 10),
        (f"{LAST_VALUE} MSE", 14),
        ("seasonal naive MSE", 18),
    )
    header = " ".join(f"{title:>{width}}" for title, width in (*columns, ("fit s", 6)))
    rows: list[str] = []
    for horizon in horizons:
        result, model = evaluate_protocol(
            name,
            horizon,
            data_home=args.data_home,
            download_if_missing=not args.no_download,
            **estimator_options(args, AarenForecaster),
        )
        print_fit_report(model, f"T={horizon}: ")
        paper = paper_mse(name, horizon)
        paper_s = f"{paper:9.2f}" if paper is not None else f"{'–':>9}"
        rows.append(
            f"{horizon:>4} {result.mse:7.3f} {result.mae:7.3f} {paper_s} {result.stream_mse:10.3f} "
            f"{result.naive_mse:14.3f} {result.seasonal_naive_mse:18.3f} {result.fit_seconds:6.0f}"
        )
        # with the training log on, each row comes with its header (the log runs between the rows)
        print("\n".join([header, rows[-1]] if args.verbose or len(rows) == 1 else rows[-1:]), flush=True)
        path = Path(args.output) / f"forecast_{name}_T{horizon}_{args.backbone}.png"
        _save_plot(args, path, lambda path, result=result: plot_protocol_example(path, result))
    if args.verbose and len(rows) > 1:
        print("\n".join([f"{name}, all horizons:", header, *rows]))
    return 0
