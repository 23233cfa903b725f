"""The decisions the forecaster's training takes on the validation tails cut from each series' end.

:class:`ValidationTails` holds the series, where each one's training part ends, the device and the
fit's :class:`~aaren_ts.estimators._fit_report.FitReport`; each of its methods takes the trained (or
untrained) networks it judges and returns its decision, recorded in the report: the start the
networks train from (:meth:`~ValidationTails.choose_start`), whether the networks on other losses
stay (:meth:`~ValidationTails.mixed_losses_help`), the share of a linear model blended in
(:meth:`~ValidationTails.blend_linear`) and, series by series, the (seasonal) naive forecast instead
of the network's (:meth:`~ValidationTails.judge_against_naive`). :func:`clear_gain` is the test the
panel-wide decisions share.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import torch

from aaren_ts.estimators._fit_report import FitReport
from aaren_ts.estimators._interval_spread import tail_intervals
from aaren_ts.estimators._progress import note
from aaren_ts.estimators._weight_averaging import unwrapped_network
from aaren_ts.nn.ensemble import ForecastEnsemble
from aaren_ts.nn.forecast_training import NAIVE_MARGIN, NAIVE_T, held_out_errors
from aaren_ts.nn.linear_blend import LINEAR_SHARES, blend_linear, fit_linear_map, linear_share_errors

__all__ = [
    "MIN_TAILS",
    "MIXED_LOSSES",
    "MIXED_LOSS_GAIN",
    "POSITIVE_MIXED_LOSSES",
    "UNTRAINED_NAIVE_GAIN",
    "NaiveVerdict",
    "ValidationTails",
    "auto_starts",
    "clear_gain",
    "comparable",
    "start_rival",
]

#: The losses ``loss="auto"`` gives the ensemble's networks in turn. The networks on the other losses
#: stay only where the validation tails show that they help (:meth:`ValidationTails.
#: mixed_losses_help`). See :doc:`/design_notes/forecaster_loss`.
MIXED_LOSSES = ("mse", "mse", "mae")
#: ... for series whose target values are all positive (on their own scale), where the sMAPE is
#: defined: the second and third networks train on it instead, kept by the same test.
POSITIVE_MIXED_LOSSES = ("mse", "smape", "smape")
#: ... by at least this much, as a mean log ratio of the tail errors (about 2 %).
MIXED_LOSS_GAIN = 0.02
#: Tails (series' channels) :func:`clear_gain` needs for a verdict: with fewer there is no gain.
MIN_TAILS = 2

#: ``initial_forecast="auto"`` does not try the level's start where the untrained network's seasonal
#: naive forecast already has at most half the level's error on the tails (as a mean log ratio, and
#: significantly). See :doc:`/design_notes/forecaster_initial_forecast`.
UNTRAINED_NAIVE_GAIN = float(np.log(2.0))


class NaiveVerdict(NamedTuple):
    """What training decides against the (seasonal) naive forecast (:meth:`ValidationTails.
    judge_against_naive`), each array ``(n_series, n_channels)``.

    Attributes
    ----------
    naive : ndarray
        The naive forecast's share in each channel's point forecast, above 0 for the channels of series
        that fall back to it (:meth:`~aaren_ts.nn.forecast_training.HeldOutErrors.naive_share`).
    spread : ndarray
        The factor on each channel's spread (1 where no series has a tail).
    naive_std : ndarray
        Where positive, the channel takes the naive method's distribution with this one-step standard
        deviation (:attr:`~aaren_ts.engine.ForecastEngine.naive_std`).
    max_std : ndarray
        Where positive, the cap on the head's spread (:attr:`~aaren_ts.engine.ForecastEngine.max_std`).
    network_is_naive : bool
        Whether no series kept the network, so it was reset to the naive forecast itself.
    """

    naive: np.ndarray
    spread: np.ndarray
    naive_std: np.ndarray
    max_std: np.ndarray
    network_is_naive: bool = False


def start_rival(losses: Sequence[str]) -> int | None:
    """With ``initial_forecast="auto"``: the network that starts from the level against the first,
    which starts from the naive forecast: the next one on the first network's loss (``None``: there
    is none, an extra network is trained beside the first)."""
    return next((k for k in range(1, len(losses)) if losses[k] == losses[0]), None)


def auto_starts(losses: Sequence[str]) -> tuple[str, ...]:
    """The starts ``initial_forecast="auto"`` plans: the rival network (:func:`start_rival`) from the
    level, the others from the naive forecast."""
    rival = start_rival(losses)
    return tuple("level" if k == rival else "naive" for k in range(len(losses)))


@dataclass(frozen=True)
class ValidationTails:
    """The series' validation tails, and the decisions taken on them.

    Attributes
    ----------
    series : list of ndarray
        Each series, whole (its training part, then its tail), scaled as the networks see it.
    n_train : list of int
        The length of each series' training part: the rest is its tail.
    device : str
        The device the networks stream the tails on.
    report : FitReport
        Where each decision is recorded.
    verbose : bool
        Whether to print (as lines of the fit's progress) the decisions the report does not record.
    """

    series: list[np.ndarray]
    n_train: list[int]
    device: str
    report: FitReport
    verbose: bool = False

    def errors(self, nets: Sequence[Any], loss: str) -> list[np.ndarray]:
        """Each skorch net's error in ``loss`` on every series' (channel's) validation tail
        (:func:`~aaren_ts.nn.forecast_training.held_out_errors`), over the series and channels with a
        tail, flat."""
        errors = []
        for net in nets:
            module = unwrapped_network(net)
            module.eval()
            errors.append(held_out_errors(module, self.series, self.n_train, self.device, loss=loss))
        scored = np.logical_and.reduce([e.count > 0 for e in errors])
        return [e.error[scored] for e in errors]

    def choose_start(
        self, train: Callable[[int, str], Any], untrained: Callable[[str], Any], losses: tuple[str, ...]
    ) -> tuple[tuple[str, ...], dict[int, Any]]:
        """``initial_forecast="auto"``: the initial forecast every network trains from, and the
        networks already trained that keep their place (by index). ``train(k, start)`` trains network
        ``k`` alone from the initial forecast ``start``; ``untrained(start)`` builds one untrained.

        Where the untrained networks already show the seasonal naive forecast with at most half the
        level's error on the tails, or there are too few tails to compare the starts on
        (:meth:`naive_start_without_trial`), every network starts from the naive forecast and nothing
        more is trained. Otherwise the first network trains from the naive
        forecast, its rival (:func:`start_rival`, on the same loss) from the level, and the start
        whose network forecasts the series' validation tails clearly better (:func:`clear_gain` on each
        series' and channel's tail error in that loss) becomes every network's: the other start's
        network trains again from it. Where neither is clearly better both networks stay, and the
        rest start from the naive forecast. Without a rival in the ensemble (one network, or none
        other on the first loss), the level's network is an extra one, which takes the first's place
        only where it is clearly better.
        """
        n = len(losses)
        if self.naive_start_without_trial(untrained, losses[0]):
            return ("naive",) * n, {}
        rival = start_rival(losses)
        naive_net = train(0, "naive")
        level_net = train(0 if rival is None else rival, "level")
        naive, level = self.errors((naive_net, level_net), losses[0])
        level_wins, mean, t = clear_gain(level, naive)
        naive_wins = clear_gain(naive, level)[0]
        if level_wins:
            starts, trained = ("level",) * n, {0 if rival is None else rival: level_net}
        elif naive_wins or rival is None:
            starts, trained = ("naive",) * n, {0: naive_net}
        else:
            starts, trained = auto_starts(losses), {0: naive_net, rival: level_net}
        verdict = "every network starts from the " + starts[0] if len(set(starts)) == 1 else "both kept"
        self.report.panel(
            "initial_forecast",
            starts[0] if len(set(starts)) == 1 else "both",
            effect=np.expm1(mean),
            statistic=t,
            threshold=-NAIVE_T,
            message=f"Starting from the level changes the typical series' tail error by "
            f"{100 * (np.exp(mean) - 1):+.1f} % (t = {t:.1f}): {verdict}",
        )
        return starts, trained

    def naive_start_without_trial(self, untrained: Callable[[str], Any], loss: str) -> bool:
        """Whether ``initial_forecast="auto"`` starts every network from the seasonal naive forecast
        without trying the level's start: where, before any training, the naive forecast forecasts
        the series' validation tails far better than each window's level (:func:`clear_gain` of the
        two untrained networks' tail errors in ``loss``, by at least ``UNTRAINED_NAIVE_GAIN``), so that
        a network started from the level has a cycle to learn that the naive start is given; and where
        fewer than ``MIN_TAILS`` series' channels have a tail, so that no trial could tell the starts
        apart (:doc:`/design_notes/forecaster_initial_forecast`). The untrained networks
        (``untrained(start)``) are built aside from the random stream, so the networks trained next
        are drawn as under ``initial_forecast="naive"``."""
        nets = []
        for start in ("naive", "level"):
            with torch.random.fork_rng(devices=[]):
                nets.append(untrained(start))
        naive, level = self.errors(nets, loss)
        tails = int(comparable(naive, level).sum())
        if tails < MIN_TAILS:
            self.report.panel(
                "initial_forecast",
                "naive: too few validation tails to compare",
                value=tails,
                message="Every network starts from the seasonal naive forecast: too few validation "
                f"tails ({tails}) to compare it with the level's start",
            )
            return True
        better, mean, t = clear_gain(naive, level, min_gain=UNTRAINED_NAIVE_GAIN)
        if better:
            self.report.panel(
                "initial_forecast",
                "naive: clearly better before training",
                effect=np.expm1(mean),
                statistic=t,
                threshold=-NAIVE_T,
                message="Before training, the seasonal naive forecast's tail error differs from the "
                f"level's by {100 * (np.exp(mean) - 1):+.1f} % (t = {t:.1f}): every network starts from it",
            )
        elif self.verbose:
            note(
                "Before training, the seasonal naive forecast's tail error differs from the level's by "
                f"{100 * (np.exp(mean) - 1):+.1f} % (t = {t:.1f}): both starts are trained"
            )
        return better

    def mixed_losses_help(self, module: torch.nn.Module, losses: Sequence[str]) -> bool:
        """Whether the networks of the ensemble ``module`` trained on other losses than the first
        (``losses``, one a member) make it forecast the series' validation tails better
        (``loss="auto"``): each series' (channel's) tail error in the first loss, of the whole ensemble
        against the ensemble of the first loss's networks alone, as a log ratio, must be at least
        ``MIXED_LOSS_GAIN`` below 0 on average over the series and by ``NAIVE_T`` standard errors."""
        series, n_train, device = self.series, self.n_train, self.device
        first_loss = [m for m, loss in zip(module.members, losses, strict=True) if loss == losses[0]]
        full = held_out_errors(module, series, n_train, device, loss=losses[0])
        alone = held_out_errors(ForecastEnsemble.of(first_loss), series, n_train, device, loss=losses[0])
        scored = full.count > 0
        helps, mean, t = clear_gain(full.error[scored], alone.error[scored])
        others = ", ".join(sorted(set(losses) - {losses[0]}))
        self.report.panel(
            "mixed_losses",
            f"kept: {', '.join(losses)}" if helps else f"every network on {losses[0]}",
            effect=np.expm1(mean),
            statistic=t,
            threshold=-NAIVE_T,
            message=f"The {others} networks change the typical series' tail error by "
            f"{100 * (np.exp(mean) - 1):+.1f} % (t = {t:.1f}): "
            + ("kept" if helps else f"trained again on {losses[0]}"),
        )
        return helps

    def blend_linear(self, module: torch.nn.Module, loss: str) -> float:
        """Blend the linear model of each window into the trained networks ``module`` and return its
        share (the ``linear_share`` step).

        Fits the map (:func:`~aaren_ts.nn.linear_blend.fit_linear_map`) on the training parts, scores
        every share on the validation tails in the first network's ``loss``
        (:func:`~aaren_ts.nn.linear_blend.linear_share_errors`) and takes the share with the lowest
        mean log ratio of each series' (channel's) tail error to the networks' alone where that ratio
        is significantly below 1 (:func:`clear_gain` without a minimum gain); the map blended in is
        then fitted on the whole series.
        """
        report, series, n_train = self.report, self.series, self.n_train
        if report.skips("linear_share"):
            return 0.0
        module.eval()
        linear = fit_linear_map(module, series, n_train)
        if linear is None:
            report.panel("linear_share", "0: no linear map could be fitted", value=0.0)
            return 0.0
        errors, count = linear_share_errors(module, linear, series, n_train, self.device, loss=loss)
        scored = (count > 0) & (errors > 0).all(axis=0)
        if scored.sum() < 2:
            report.panel("linear_share", "0: too few validation tails", value=0.0)
            return 0.0
        log_ratio = np.log(errors[:, scored] / errors[0, scored]).mean(axis=1)
        best = int(np.argmin(log_ratio))
        # (significance alone, no minimum gain: the blend costs nothing to stream)
        helps, mean, t = clear_gain(errors[best, scored], errors[0, scored], min_gain=0.0)
        share = float(LINEAR_SHARES[best]) if helps else 0.0
        report.panel(
            "linear_share",
            "blended in" if helps else "0: no significant gain",
            value=share,
            effect=np.expm1(mean),
            statistic=t,
            threshold=-NAIVE_T,
            message=f"A linear model's share of {LINEAR_SHARES[best]:.1f} changes the typical series' "
            f"tail error by {100 * (np.exp(mean) - 1):+.1f} % (t = {t:.1f}): "
            + ("blended in" if helps else "not taken"),
        )
        if share > 0:
            linear = fit_linear_map(module, series, [len(v) for v in series])
            if linear is None:
                return 0.0
            blend_linear(module, linear, share)
        return share

    def judge_against_naive(
        self,
        module: torch.nn.Module,
        loss: str,
        log_scale: np.ndarray | None = None,
        labels: tuple[Sequence[Any], Sequence[Any]] | None = None,
    ) -> NaiveVerdict:
        """Which series forecast better with the (seasonal) naive method than with the trained
        network ``module`` (judged in the first network's ``loss``).

        Each series is streamed through its validation tail
        (:func:`~aaren_ts.nn.forecast_training.held_out_errors`):
        a series keeps the network where its error there is clearly and, unless the panel's is,
        significantly below the naive forecast's
        (:meth:`~aaren_ts.nn.forecast_training.HeldOutErrors.falls_back`); the others blend the naive
        forecast with the network's where the panel's tails show the network's gain, and take the
        naive forecast alone where they do not
        (:meth:`~aaren_ts.nn.forecast_training.HeldOutErrors.naive_share`). When no series keeps the
        network, it is reset to the naive forecast (its initialisation) and every series uses it as
        the network.

        Each channel of a series is judged on its own. Then every channel's spread factor is chosen on
        its tail, around the point forecast it will use, by the interval score
        (:func:`~aaren_ts.estimators._interval_spread.tail_intervals`): the head's spread is shared by
        all series and fits none exactly (:doc:`/design_notes/forecaster_intervals`). A log-scale channel
        (``log_scale``, as :func:`~aaren_ts.estimators._interval_spread.tail_intervals` takes it) has
        its intervals scored in the series' units, where they are judged. A channel whose point
        forecast is the naive one takes the naive method's own intervals where they score better on its
        tail (the head's spread follows each window's swings: on a random walk that trended in its last
        window, the head's interval was up to five times the naive method's). A channel alone on its
        scale (a single univariate series) has no panel to pool its factor with: it leans towards the
        naive method's width, and the comparison uses factors fitted on the other half of its tail.

        ``labels`` (the series' ids and the channels' names) name the rows of the fit report.

        Returns
        -------
        NaiveVerdict
        """
        series, n_train, device, report = self.series, self.n_train, self.device, self.report
        if labels is None:
            labels = (list(range(len(series))), list(range(module.n_channels)))
        ids, columns = labels
        tails = held_out_errors(module, series, n_train, device, loss=loss)
        shape = tails.error.shape
        if not (tails.count > 0).any():
            for step in ("naive_fallback", "interval_spread"):
                if not report.skips(step):
                    report.panel(step, "none: no validation tail")
            return NaiveVerdict(np.zeros(shape, dtype=bool), np.ones(shape), np.zeros(shape), np.zeros(shape))
        if report.skips("naive_fallback"):
            naive = np.zeros(shape)
        else:
            naive = tails.naive_share()
            report_fallback(report, tails, naive, ids, columns)
        naive_point = naive > 0
        network_is_naive = bool(naive_point.all())
        if network_is_naive:
            module.reset_to_naive()  # no clear gain over the naive forecast anywhere: become it
            naive[:] = 0.0
        if report.skips("interval_spread"):
            return NaiveVerdict(naive, np.ones(shape), np.zeros(shape), np.zeros(shape), network_is_naive)
        intervals = tail_intervals(
            module, series, n_train, naive, device, naive_point=naive_point, log_scale=log_scale
        )
        own, capped = intervals.naive_std > 0, intervals.max_std > 0
        kind = np.where(own, "naive method's", np.where(capped, "head's, capped", "head's"))
        report.per_channel(
            "interval_spread",
            ids,
            columns,
            kind,
            value=intervals.spread,
            message=f"Interval widths chosen on the tails: {int(own.sum())} channel(s) take the naive "
            f"method's intervals, {int(capped.sum())} the head's capped",
        )
        return NaiveVerdict(naive, intervals.spread, intervals.naive_std, intervals.max_std, network_is_naive)


def report_fallback(
    report: FitReport, tails: Any, naive: np.ndarray, ids: Sequence[Any], columns: Sequence[Any]
) -> None:
    """Record each channel's share of the naive forecast (``naive``) with the tail errors it was
    judged on (:class:`~aaren_ts.nn.forecast_training.HeldOutErrors`)."""
    scored = tails.count > 0
    decision = np.where(naive >= 1.0, "naive", np.where(naive > 0, "blend", "network"))
    decision = np.where(scored, decision, np.where(naive >= 1.0, "naive (no tail)", "network (no tail)"))
    ratio = tails.error / np.where(tails.naive_error > 0, tails.naive_error, 1.0)
    effect = np.where(scored & (tails.naive_error > 0), ratio - 1.0, np.nan)
    statistic = np.where(scored, tails.improvement_t(), np.nan)
    pooled = "the panel's tails show the network's gain" if tails.pooled_gain() else "no pooled gain"
    counts = {name: int((decision == name).sum()) for name in ("network", "blend", "naive")}
    report.per_channel(
        "naive_fallback",
        ids,
        columns,
        decision,
        value=naive,
        effect=effect,
        statistic=statistic,
        threshold=NAIVE_T,
        message=f"Against the naive forecast on the tails ({pooled}, margin {NAIVE_MARGIN:.0%}): "
        f"{counts['network']} channel(s) keep the network, {counts['blend']} blend, "
        f"{counts['naive']} take the naive forecast",
    )


def comparable(error: np.ndarray, baseline: np.ndarray) -> np.ndarray:
    """The tails :func:`clear_gain` compares (bool, same shape): both errors positive."""
    return (np.asarray(error) > 0) & (np.asarray(baseline) > 0)


def clear_gain(
    error: np.ndarray, baseline: np.ndarray, min_gain: float = MIXED_LOSS_GAIN
) -> tuple[bool, float, float]:
    """Whether ``error`` is clearly below ``baseline`` (per series, same shape): the mean over the
    series of ``log(error / baseline)`` at most ``-min_gain`` and ``NAIVE_T`` standard errors below
    0. Returns the verdict, the mean log ratio and its t statistic (series with a zero error are left
    out; fewer than two series: no gain)."""
    error, baseline = np.ravel(error), np.ravel(baseline)
    both = comparable(error, baseline)
    if both.sum() < MIN_TAILS:
        return False, 0.0, 0.0
    log_ratio = np.log(error[both] / baseline[both])
    mean, spread = float(log_ratio.mean()), float(log_ratio.std(ddof=1) / np.sqrt(log_ratio.size))
    t = mean / spread if spread > 0 else (-np.inf if mean < 0 else 0.0)
    return bool(mean <= -min_gain and t <= -NAIVE_T), mean, float(t)
