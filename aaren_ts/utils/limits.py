"""How far from its training statistics an input may lie before the networks' float32 arithmetic fails.

The estimators and the exported ONNX steps standardise every input with its channel's (or series')
training mean and standard deviation, then compute in float32, whose largest value is about 3.4e38.
A standardised value is squared in the window and layer statistics (its square overflows beyond about
1.8e19) and multiplied by the weights; an overflow gives ``inf`` and then ``NaN``, which a stream carries
into every later forecast (for as long as the value stays in a window, or for good once it reaches the
recurrent state). Measured on the exported forecaster (local normalisation by mean, by last value and
none; channel embedding) and on the classifier (all three readouts): finite up to a standardised 1e19,
non-finite from 1e20.

:data:`MAX_STANDARDISED` is 1e12: a factor 1e7 below that breakdown, room for the weights, for sums of
squares over a window and over ``d_model`` features; and far beyond anything real data yields, even
for a channel that was constant in training (its scale is then 1, so 1e12 is its distance from the
mean in its own units). A larger value is almost surely an error (a sentinel such as 1e30, wrong
units), refused before any state changes rather than left to poison the stream.

:data:`MAX_SCALE` bounds a series' standard deviation the same way: the band of
:data:`MAX_STANDARDISED` deviations around its mean must fit in float32 (a scale of 1e30 is a sentinel
or a damaged file, not a series).

Standard library and numpy only: the torch-free :mod:`aaren_ts.onnx` uses it too.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MAX_SCALE", "MAX_STANDARDISED", "first_beyond"]

#: The largest magnitude of a standardised input (standard deviations from the training mean).
MAX_STANDARDISED = 1e12
#: The largest standard deviation a series may be standardised by (about 3.4e26).
MAX_SCALE = float(np.finfo(np.float32).max) / MAX_STANDARDISED


def first_beyond(standardised: np.ndarray, bound: float = MAX_STANDARDISED) -> tuple[int, ...] | None:
    """The index of the first entry of ``standardised`` whose magnitude exceeds ``bound`` (or is NaN,
    as an overflowed standardisation gives), or ``None`` if there is none.

    Parameters
    ----------
    standardised : ndarray
        Standardised values (float64).
    bound : float, default=MAX_STANDARDISED
        The largest magnitude accepted.

    Returns
    -------
    tuple of int or None
    """
    beyond = ~(np.abs(standardised) <= bound)
    if not beyond.any():
        return None
    return tuple(int(i) for i in np.argwhere(beyond)[0])
