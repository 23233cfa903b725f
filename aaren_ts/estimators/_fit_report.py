"""The decisions a forecaster's ``fit`` takes, declared in order and recorded as they are taken.

:data:`FIT_STEPS` lists every step that chooses something from the data (a rule on the series'
lengths, or a comparison on the validation tails cut from each series' end), in the order ``fit``
takes them. :class:`FitReport` collects one row per decision: for the whole panel, or per series and
channel where the step decides per series. ``AarenForecaster.fit_report_`` is its table and
:func:`summarize_fit_report` condenses it to one row per step (what ``aaren-ts forecast`` prints).

A step named in ``skip_steps`` is not taken: it keeps its neutral choice (:attr:`FitStep.neutral`),
and the report says so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "FIT_STEPS",
    "REPORT_COLUMNS",
    "SKIPPABLE_STEPS",
    "FitReport",
    "FitStep",
    "format_fit_report",
    "notable_decisions",
    "report_from_plain",
    "report_to_plain",
    "summarize_fit_report",
]


@dataclass(frozen=True)
class FitStep:
    """One decision step of a forecaster's fit.

    Attributes
    ----------
    name : str
        The step's name, as ``fit_report_`` and ``skip_steps`` write it.
    decides : str
        What the step chooses.
    scope : {"panel", "series"}
        One decision for all series, or one per series and channel.
    neutral : str or None
        The choice kept when the step is skipped; ``None``: the step cannot be skipped (its
        parameter sets it instead).
    """

    name: str
    decides: str
    scope: str
    neutral: str | None


#: The decision steps of ``AarenForecaster.fit``, in the order they are taken.
FIT_STEPS: tuple[FitStep, ...] = (
    FitStep(
        "context_length", "the values each token embeds, from the training parts' lengths", "panel", None
    ),
    FitStep(
        "seasonal_period", "the seasonal period, from the training parts' autocorrelation", "panel", None
    ),
    FitStep("target_scale", "whether a channel is forecast on the log scale", "series", "own scale"),
    FitStep("initial_forecast", "the forecast the networks start from: naive or level", "panel", "naive"),
    FitStep(
        "mixed_losses",
        "whether networks trained on other losses than the first stay",
        "panel",
        "every network on the first loss",
    ),
    FitStep("linear_share", "the share of a linear model blended into the networks", "panel", "0"),
    FitStep("naive_fallback", "each channel's share of the (seasonal) naive forecast", "series", "network"),
    FitStep(
        "own_scale_retry",
        "training again on the own scale where the log scale kept no network",
        "panel",
        "no retry",
    ),
    FitStep(
        "interval_spread",
        "each channel's interval width: factor, naive intervals or cap",
        "series",
        "head's intervals",
    ),
    FitStep(
        "theta_combination",
        "each channel's weight of the network against Theta (and ETS)",
        "series",
        "network alone",
    ),
    FitStep(
        "interval_calibration",
        "whether the validation tails start the online calibration",
        "panel",
        "nominal levels",
    ),
)
_STEPS = {step.name: step for step in FIT_STEPS}
#: The names ``skip_steps`` accepts.
SKIPPABLE_STEPS: tuple[str, ...] = tuple(step.name for step in FIT_STEPS if step.neutral is not None)

#: The columns of ``fit_report_``: the step, the series and channel it decided for (``None``: the whole
#: panel), the decision, the number chosen (``value``), the relative change of the validation tails'
#: error it was judged on (``effect``, ``-0.05``: 5 % lower), the test statistic and the bar it had to
#: pass (``threshold``).
REPORT_COLUMNS = ("step", "series", "channel", "decision", "value", "effect", "statistic", "threshold")


def _number(value: Any) -> float:
    return math.nan if value is None else float(value)


class FitReport:
    """Collects the decisions of one fit, in the order they are taken.

    Parameters
    ----------
    skip : sequence of str, default=()
        Steps not to take (names of :data:`SKIPPABLE_STEPS`).
    announce : callable or None, default=None
        Called with a one-line description of every decision (the estimator's verbose output).
    """

    def __init__(self, skip: Sequence[str] = (), announce: Callable[[str], None] | None = None) -> None:
        unknown = sorted(set(skip) - set(SKIPPABLE_STEPS))
        if unknown:
            raise ValueError(f"skip_steps: unknown step(s) {unknown}; the steps are {list(SKIPPABLE_STEPS)}")
        self.skip = frozenset(skip)
        self.announce = announce
        self.rows: list[tuple[Any, ...]] = []

    def skips(self, step: str) -> bool:
        """Whether ``step`` is switched off (recorded as skipped, with its neutral choice)."""
        if step not in self.skip:
            return False
        self.panel(step, f"skipped: {_STEPS[step].neutral}")
        return True

    def panel(
        self,
        step: str,
        decision: str,
        value: float | None = None,
        effect: float | None = None,
        statistic: float | None = None,
        threshold: float | None = None,
        message: str | None = None,
    ) -> None:
        """Record one decision for the whole panel (replacing an earlier one of ``step``: a step taken
        again, as after a retry, keeps its last decision); ``message`` is announced."""
        row = (step, None, None, decision, *map(_number, (value, effect, statistic, threshold)))
        self._record(step, [row], message)

    def per_channel(
        self,
        step: str,
        ids: Sequence[Any],
        columns: Sequence[Any],
        decisions: np.ndarray,
        value: np.ndarray | None = None,
        effect: np.ndarray | None = None,
        statistic: np.ndarray | None = None,
        threshold: float | None = None,
        message: str | None = None,
    ) -> None:
        """Record one decision per series and channel (arrays ``(len(ids), len(columns))``), replacing
        an earlier record of ``step``."""
        shape = (len(ids), len(columns))
        decisions = np.broadcast_to(np.asarray(decisions, dtype=object), shape)
        numbers = [
            np.full(shape, np.nan) if a is None else np.broadcast_to(np.asarray(a, dtype=np.float64), shape)
            for a in (value, effect, statistic)
        ]
        limit = _number(threshold)
        rows = [
            (step, series, channel, str(decisions[k, j]), *(float(a[k, j]) for a in numbers), limit)
            for k, series in enumerate(ids)
            for j, channel in enumerate(columns)
        ]
        self._record(step, rows, message)

    def _record(self, step: str, rows: list[tuple[Any, ...]], message: str | None) -> None:
        """Put ``rows`` in place of any earlier record of ``step`` and announce ``message``."""
        if step not in _STEPS:
            raise KeyError(step)
        self.rows = [row for row in self.rows if row[0] != step] + rows
        if message and self.announce is not None:
            self.announce(message)

    def extend(self, rows: Iterable[tuple[Any, ...]]) -> None:
        """Append rows recorded earlier (a ``fit`` after ``pretrain`` keeps the pretraining's)."""
        self.rows.extend(tuple(row) for row in rows)

    def frame(self) -> pd.DataFrame:
        """The decisions as a tidy table, one row per decision, in :data:`REPORT_COLUMNS`, ordered as
        :data:`FIT_STEPS`."""
        order = {name: k for k, name in enumerate(_STEPS)}
        rows = sorted(self.rows, key=lambda row: order[row[0]])  # (stable: per-series rows keep their order)
        return _table(rows)


def _table(rows: Sequence[tuple[Any, ...]]) -> pd.DataFrame:
    """``rows`` as a table of :data:`REPORT_COLUMNS`: the labels as objects (``None`` stays ``None``:
    the whole panel), the numbers as float64."""
    data = {}
    for k, name in enumerate(REPORT_COLUMNS):
        if k < 4:
            labels = np.empty(len(rows), dtype=object)
            for i, row in enumerate(rows):  # (one by one: a tuple id stays one label)
                labels[i] = row[k]
            data[name] = pd.Series(labels, dtype=object)
        else:
            data[name] = pd.Series([row[k] for row in rows], dtype=np.float64)
    return pd.DataFrame(data)


def summarize_fit_report(report: pd.DataFrame) -> pd.DataFrame:
    """One row per step of ``report`` (a ``fit_report_``): its decision (for a step decided per series,
    how many series' channels took each decision), the median value chosen, and the effect, statistic
    and threshold of a decision taken once.

    Parameters
    ----------
    report : pandas.DataFrame
        A table in the layout of ``AarenForecaster.fit_report_``.

    Returns
    -------
    pandas.DataFrame
        Indexed by step, with the columns ``decision``, ``value``, ``effect``, ``statistic`` and
        ``threshold``.
    """
    rows = []
    for step, group in report.groupby("step", sort=False):
        if len(group) == 1:
            first = group.iloc[0]
            numbers = [first[name] for name in ("value", "effect", "statistic", "threshold")]
            rows.append((step, first["decision"], *numbers))
            continue
        counts = group["decision"].value_counts(sort=True)
        decision = ", ".join(f"{name} {count}" for name, count in counts.items())
        value = float(group["value"].median()) if group["value"].notna().any() else math.nan
        rows.append((step, decision, value, math.nan, math.nan, group["threshold"].iloc[0]))
    summary = pd.DataFrame(rows, columns=["step", "decision", "value", "effect", "statistic", "threshold"])
    return summary.set_index("step")


def format_fit_report(report: pd.DataFrame) -> str:
    """The summary of ``report`` (:func:`summarize_fit_report`) as a plain-text table, for a terminal.

    Parameters
    ----------
    report : pandas.DataFrame
        A table in the layout of ``AarenForecaster.fit_report_``.

    Returns
    -------
    str
        One line per step: name, decision, value, effect (as a percentage), statistic and threshold;
        a blank where a number does not apply.
    """
    summary = summarize_fit_report(report)

    def number(value: float, spec: str) -> str:
        return "" if pd.isna(value) else format(value, spec)

    lines = [("step", "decision", "value", "effect", "statistic", "threshold")]
    for step, row in summary.iterrows():
        lines.append(
            (
                str(step),
                str(row["decision"]),
                number(row["value"], ".4g"),
                number(row["effect"], "+.1%"),
                number(row["statistic"], ".2f"),
                number(row["threshold"], ".3g"),
            )
        )
    widths = [max(len(line[k]) for line in lines) for k in range(len(lines[0]))]
    text = []
    for line in lines:
        cells = [line[0].ljust(widths[0]), line[1].ljust(widths[1])]
        cells += [cell.rjust(width) for cell, width in zip(line[2:], widths[2:], strict=True)]
        text.append("  ".join(cells).rstrip())
    return "\n".join(text)


def notable_decisions(report: pd.DataFrame) -> list[str]:
    """The decisions of ``report`` a user should hear of without asking, one readable sentence each:
    series that forecast with the seasonal naive method instead of the network, a network trained
    again on the series' own scale, and a combination with Theta.

    Parameters
    ----------
    report : pandas.DataFrame
        A table in the layout of ``AarenForecaster.fit_report_``.

    Returns
    -------
    list of str
        Empty where the fit kept the network for every series alone.
    """
    notes = []
    steps = report.groupby("step", sort=False)
    groups = {name: group for name, group in steps}
    fallback = groups.get("naive_fallback")
    if fallback is not None and len(fallback):
        kind = fallback["decision"].str.split(" ").str[0]
        naive, blend, total = int((kind == "naive").sum()), int((kind == "blend").sum()), len(fallback)
        if naive == total:
            notes.append(
                "the network did not clearly beat the seasonal naive forecast on the validation tail of "
                "any series, so every series takes the seasonal naive forecast in its place"
            )
        elif naive or blend:
            notes.append(
                f"{naive} of {total} series' channels forecast with the seasonal naive method and "
                f"{blend} blend it with the network, where the network did not clearly beat it on their "
                "validation tails"
            )
    retry = groups.get("own_scale_retry")
    if retry is not None and retry["decision"].iloc[0].startswith("trained again"):
        notes.append(
            "the network was trained again on the series' own scale after the log scale kept no network"
        )
    theta = groups.get("theta_combination")
    combined = theta["decision"].str.startswith("combined") if theta is not None else None
    if combined is not None and combined.any():
        partner = theta["decision"][combined].iloc[0].removeprefix("combined with ")
        count = int(combined.sum())
        notes.append(f"{count} of {len(theta)} series' channels combine the network with {partner}")
    equal = theta["decision"].str.startswith("equal mean") if theta is not None else None
    if equal is not None and equal.any():
        partner = theta["decision"][equal].iloc[0].removeprefix("equal mean with ").split(":")[0]
        notes.append(
            f"{int(equal.sum())} of {len(theta)} series' channels forecast with the equal mean of their "
            f"forecast and {partner}'s, having no validation tail to weigh the two"
        )
    return notes


_NUMBERS = list(REPORT_COLUMNS[4:])


def report_to_plain(report: pd.DataFrame, ids: Sequence[Any], columns: Sequence[Any]) -> dict[str, Any]:
    """``report`` as plain data for a saved file: steps and decisions as strings, series and channels
    as positions in ``ids`` and ``columns`` (-1: the whole panel), the numbers as one float64 array."""
    series_at = {series: k for k, series in enumerate(ids)}
    channel_at = {channel: j for j, channel in enumerate(columns)}
    whole = np.array([c is None for c in report["channel"]])  # (the panel's rows)
    series = zip(report["series"], whole, strict=True)
    channels = zip(report["channel"], whole, strict=True)
    return {
        "step": [str(s) for s in report["step"]],
        "series": [-1 if flat else series_at.get(s, -1) for s, flat in series],
        "channel": [-1 if flat else channel_at.get(c, -1) for c, flat in channels],
        "decision": [str(d) for d in report["decision"]],
        "numbers": report[_NUMBERS].to_numpy(dtype=np.float64).reshape(-1, len(_NUMBERS)),
    }


def report_from_plain(plain: Any, ids: Sequence[Any], columns: Sequence[Any]) -> pd.DataFrame:
    """The report :func:`report_to_plain` wrote, checked: a ``ValueError`` for anything else."""
    keys = ("step", "series", "channel", "decision", "numbers")
    if not isinstance(plain, dict) or sorted(plain) != sorted(keys):
        raise ValueError(f"the saved fit report must be a mapping of {list(keys)}")
    steps, series, channels, decisions = (plain[key] for key in keys[:4])
    numbers = np.asarray(plain["numbers"], dtype=np.float64)
    n = len(steps)
    if not (
        all(isinstance(v, list) and len(v) == n for v in (series, channels, decisions))
        and numbers.shape == (n, len(_NUMBERS))
        and all(s in _STEPS for s in steps)
        and all(isinstance(d, str) for d in decisions)
        and all(isinstance(k, int) and -1 <= k < len(ids) for k in series)
        and all(isinstance(j, int) and -1 <= j < len(columns) for j in channels)
    ):
        raise ValueError(
            "the saved fit report is damaged: its columns disagree or name unknown steps or series"
        )
    rows = [
        (step, None if k < 0 else ids[k], None if j < 0 else columns[j], decision, *map(float, row))
        for step, k, j, decision, row in zip(steps, series, channels, decisions, numbers, strict=True)
    ]
    return _table(rows)
