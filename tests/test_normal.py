"""``aaren_ts.utils.normal``: the vectorised normal quantiles agree with the standard library's."""

from __future__ import annotations

from statistics import NormalDist

import numpy as np

from aaren_ts.utils.normal import MIN_LEVEL, gaussian_z, level_z


def test_level_z_equals_statistics_normaldist() -> None:
    """``level_z`` is the same algorithm as ``NormalDist.inv_cdf`` (Wichura's AS 241), on arrays.

    It is kept as numpy code because the calibrated intervals evaluate it on arrays of
    (streams, levels, horizon, channels) at every interval forecast, and the torch-free ONNX
    streamer needs it too; ``NormalDist`` takes one number at a time.
    """
    rng = np.random.default_rng(0)
    levels = np.concatenate([np.geomspace(MIN_LEVEL, 1.0, 4000), rng.uniform(MIN_LEVEL, 1.0, 20000)])
    standard = NormalDist()
    expected = np.array([-standard.inv_cdf(level / 2) for level in levels])
    np.testing.assert_allclose(level_z(levels), expected, rtol=2e-15, atol=0)  # a few ulps (numpy vs math)
    shaped = levels[:24].reshape(2, 3, 4).astype(np.float32)
    assert level_z(shaped).shape == (2, 3, 4) and level_z(shaped).dtype == np.float64


def test_level_z_clips_to_its_range() -> None:
    assert level_z(np.array([0.0, -1.0]))[0] == level_z(np.array([MIN_LEVEL]))[0]
    np.testing.assert_array_equal(level_z(np.array([1.0, 2.0])), [0.0, 0.0])


def test_gaussian_z_uses_normaldist() -> None:
    coverage = np.array([[0.0, 0.5], [0.9, 1.0]])
    z = gaussian_z(coverage)
    assert z.shape == (2, 2)
    assert z[0, 0] == 0.0 and z[1, 1] == np.inf
    assert z[1, 0] == NormalDist().inv_cdf(0.95)
