"""The statistical partner of the forecaster's combination, as streams, and its place in a saved state.

The forecaster's ``combination`` weighs each series' forecast with a statistical method's: the Theta
method (:mod:`aaren_ts.statistical.theta`), or the mean of the Theta method and damped-trend
exponential smoothing (:mod:`aaren_ts.statistical.ets`). :class:`PartnerStreams` advances both in O(1)
per value and gives their mean forecast; :func:`combination_shift` is what the combination adds to a
forecast; an exported state carries the partner under ``theta.<field>`` entries (exponential
smoothing's fields as ``theta.ets_<field>``), beside the network's weights ``theta.weight``.

This module uses NumPy only: the torch-free ONNX streamer runs it as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from aaren_ts.statistical.ets import ETSStreams
from aaren_ts.statistical.theta import ThetaStreams

__all__ = [
    "ETS_PREFIX",
    "STATE_PREFIX",
    "PartnerStreams",
    "combination_shift",
    "state_entries",
    "stream_arrays",
    "stream_rows",
]

#: The prefix of the partner's entries in an exported state (``theta.level``, ..., ``theta.weight``).
STATE_PREFIX = "theta."
#: The prefix of exponential smoothing's fields among the partner's arrays (``ets_level``, ...).
ETS_PREFIX = "ets_"


@dataclass
class PartnerStreams:
    """The Theta method's streams and, optionally, exponential smoothing's, row for row.

    Attributes
    ----------
    theta : ThetaStreams
        The Theta method's streams.
    ets : ETSStreams or None
        Damped-trend exponential smoothing's streams (same rows and season length), or ``None``: the
        partner is the Theta method alone.
    """

    theta: ThetaStreams
    ets: ETSStreams | None = None

    def __len__(self) -> int:
        return len(self.theta)

    @property
    def sp(self) -> int:
        """The season length."""
        return self.theta.season.shape[1]

    @property
    def clock(self) -> np.ndarray:
        """The steps each stream has seen, gaps included."""
        return self.theta.clock

    def update(self, values: np.ndarray, rows: np.ndarray | None = None) -> None:
        """Advance the streams ``rows`` (all: ``None``) by one step with ``values`` (NaN: a gap)."""
        self.theta.update(values, rows)
        if self.ets is not None:
            self.ets.update(values, rows)

    def forecast(self, horizon: int, rows: np.ndarray | None = None) -> np.ndarray:
        """The partner's forecasts ``(R, horizon)`` from the last step of the streams ``rows`` (all:
        ``None``): the Theta method's, or its mean with exponential smoothing's (NaN before a stream's
        first observation)."""
        theta = self.theta.forecast(horizon, rows)
        if self.ets is None:
            return theta
        return 0.5 * (theta + self.ets.forecast(horizon, rows))

    def fresh(self, n: int) -> PartnerStreams:
        """``n`` streams for series that joined after fitting (their weight is 1: their forecasts are
        never used), with the same parts as ``self``."""
        theta = ThetaStreams.empty(np.full(n, 0.5), np.zeros((n, self.sp)))
        return PartnerStreams(theta, None if self.ets is None else ETSStreams.flat(n, self.sp))

    def take(self, rows: np.ndarray) -> PartnerStreams:
        """A copy of the streams ``rows``."""
        return PartnerStreams(self.theta.take(rows), None if self.ets is None else self.ets.take(rows))

    def cat(self, other: PartnerStreams) -> PartnerStreams:
        """The streams of ``self`` then those of ``other`` (same parts and season length)."""
        ets = None if self.ets is None or other.ets is None else self.ets.cat(other.ets)
        return PartnerStreams(self.theta.cat(other.theta), ets)

    def arrays(self) -> dict[str, np.ndarray]:
        """The state as named arrays (what saving and restoring carry): the Theta method's fields, then
        exponential smoothing's prefixed with :data:`ETS_PREFIX`."""
        ets = {} if self.ets is None else {f"{ETS_PREFIX}{k}": v for k, v in self.ets.arrays().items()}
        return {**self.theta.arrays(), **ets}

    @classmethod
    def of(cls, arrays: dict[str, np.ndarray]) -> PartnerStreams:
        """Streams from :meth:`arrays`' output, taken as they are (no checks: a state already checked)."""
        theta, ets = _split(arrays)
        return cls(ThetaStreams(**theta), ETSStreams(**ets) if ets else None)

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], n: int, sp: int) -> PartnerStreams:
        """Streams from :meth:`arrays`' output, checked: ``n`` streams with a season of ``sp``, each part
        (:meth:`ThetaStreams.from_arrays`, :meth:`ETSStreams.from_arrays`) and the parts' clocks equal
        (``ValueError`` naming what does not fit)."""
        theta, ets = _split(arrays)
        streams = cls(
            ThetaStreams.from_arrays(theta, n, sp), ETSStreams.from_arrays(ets, n, sp) if ets else None
        )
        if streams.ets is not None and not np.array_equal(streams.ets.clock, streams.theta.clock):
            raise ValueError("the exponential smoothing streams' clocks disagree with the Theta streams'")
        return streams


def _split(arrays: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The Theta method's arrays and exponential smoothing's (their :data:`ETS_PREFIX` removed)."""
    theta = {k: v for k, v in arrays.items() if not k.startswith(ETS_PREFIX)}
    ets = {k[len(ETS_PREFIX) :]: v for k, v in arrays.items() if k.startswith(ETS_PREFIX)}
    return theta, ets


def stream_rows(series: np.ndarray, n_channels: int) -> np.ndarray:
    """The rows of the streams of ``series`` (indices of series, each with one stream per channel,
    channel fastest): ``(len(series) * n_channels,)``."""
    return (np.asarray(series)[:, None] * n_channels + np.arange(n_channels)).ravel()


def combination_shift(
    streams: PartnerStreams, weight: np.ndarray, point: np.ndarray, series: np.ndarray
) -> np.ndarray:
    """What the combination with the partner adds to forecasts ``point`` ``(R, horizon, C)`` whose own
    weights are ``weight`` ``(R, C)``: ``(1 - weight) * (partner - point)``, with ``partner`` the
    forecasts of the streams of ``series`` ``(R,)`` (:func:`stream_rows`); 0 where the weight is 1 or
    the stream has seen nothing. Only the series with a weight below 1 are forecast (a series that
    joined after fit has none)."""
    share = 1.0 - np.asarray(weight)
    shift = np.zeros_like(point)
    combined = np.flatnonzero(share.any(axis=1))
    if not len(combined):
        return shift
    _, horizon, c = point.shape
    rows = stream_rows(np.asarray(series)[combined], c)
    forecast = streams.forecast(horizon, rows).reshape(len(combined), c, horizon).transpose(0, 2, 1)
    part = share[combined, None, :] * (forecast - point[combined])
    shift[combined] = np.where(np.isfinite(part), part, 0.0)
    return shift


def state_entries(streams: PartnerStreams, n_series: int) -> dict[str, np.ndarray]:
    """``streams`` (one per series and channel, channel fastest) as an exported state's entries
    ``theta.<field>`` of shape ``(n_series, C, ...)``."""
    return {
        f"{STATE_PREFIX}{name}": value.reshape(n_series, -1, *value.shape[1:])
        for name, value in streams.arrays().items()
    }


def stream_arrays(state: dict[str, np.ndarray], copy: bool = False) -> dict[str, np.ndarray]:
    """The partner's arrays from an exported state's ``theta.<field>`` entries (the weight left out),
    one row per series and channel (copies with ``copy``)."""
    return {
        name[len(STATE_PREFIX) :]: (
            value.reshape(-1, *value.shape[2:]).copy() if copy else value.reshape(-1, *value.shape[2:])
        )
        for name, value in state.items()
        if name.startswith(STATE_PREFIX) and name != f"{STATE_PREFIX}weight"
    }
