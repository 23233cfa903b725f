"""How :class:`~aaren_ts.AarenClassifier` runs its trained network on whole series.

:func:`scaled_values` standardises the series with the training statistics (and refuses a value the
network would overflow on); :func:`inference_batches` cuts them into batches trimmed to their longest
series; :func:`final_proba` and :func:`staged_proba` return the class probabilities after each
series' last step and after every step. Each takes its inputs and returns arrays; the estimator runs
them in its torch context.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

from aaren_ts.estimators._inputs import Panel
from aaren_ts.utils.limits import MAX_STANDARDISED, first_beyond

__all__ = ["final_proba", "inference_batches", "scaled_values", "staged_proba"]

#: The least number of series per batch at inference (``batch_size`` where larger).
INFERENCE_BATCH = 256


def scaled_values(
    panel: Panel, mean: np.ndarray, scale: np.ndarray, name: str = "X"
) -> tuple[np.ndarray, np.ndarray]:
    """The series of ``panel`` standardised with the channels' training ``mean`` and ``scale``,
    zero-padded, ``(n, T, C)`` float32, and their lengths.

    Raises
    ------
    ValueError
        If a value lies more than :data:`~aaren_ts.utils.limits.MAX_STANDARDISED` standard deviations
        from its channel's training mean: the network computes in float32, where such a value
        overflows and gives NaN probabilities (and a stream that took it NaN for good). The message
        names the input ``name``.
    """
    standardised = (panel.values - mean) / scale
    standardised = np.where(panel.mask()[..., None], standardised, 0.0)
    index = first_beyond(standardised)
    if index is not None:
        series, t, channel = index
        raise ValueError(
            f"{name}: the value {panel.values[index]:.6g} (series {series}, channel {channel}, time "
            f"point {t}) lies {abs(standardised[index]):.3g} standard deviations from the channel's "
            f"training mean; the network computes in float32 and takes at most {MAX_STANDARDISED:.0e}, "
            "as larger values would overflow into NaN probabilities: check the value and its units"
        )
    return standardised.astype(np.float32), panel.lengths


def inference_batches(
    values: np.ndarray, lengths: np.ndarray, batch_size: int, device: torch.device
) -> Iterator[tuple[slice, torch.Tensor, torch.Tensor]]:
    """``(rows, x, mask)`` over batches of ``max(INFERENCE_BATCH, batch_size)`` of the standardised
    series ``values`` ``(n, T, C)`` (``lengths`` real steps each), each trimmed to its longest series,
    on ``device``; ``mask`` is True at real steps."""
    step = max(INFERENCE_BATCH, int(batch_size))
    for start in range(0, len(lengths), step):
        sl = slice(start, start + step)
        t_max = max(int(lengths[sl].max()), 1)
        x = torch.as_tensor(values[sl, :t_max], device=device)
        mask = torch.arange(t_max, device=device).unsqueeze(0) < torch.as_tensor(
            lengths[sl], device=device
        ).unsqueeze(1)
        yield sl, x, mask


@torch.no_grad()
def final_proba(
    module: Any, values: np.ndarray, lengths: np.ndarray, n_classes: int, batch_size: int, device: Any
) -> np.ndarray:
    """The class probabilities ``(n, n_classes)`` of the network ``module`` (in eval mode) after each
    series' last real step, float64."""
    out = np.empty((len(lengths), n_classes))
    for sl, x, mask in inference_batches(values, lengths, batch_size, device):
        _, state = module.encode(x, mask, every_step=False)
        probs = torch.softmax(module.logits(module.current_features(state)), dim=-1)
        out[sl] = probs.double().cpu().numpy()
    return out


@torch.no_grad()
def staged_proba(
    module: Any,
    values: np.ndarray,
    lengths: np.ndarray,
    n_steps: int,
    n_classes: int,
    batch_size: int,
    device: Any,
) -> np.ndarray:
    """The class probabilities ``(n, n_steps, n_classes)`` of the network ``module`` (in eval mode)
    after every step, each from that prefix only; a series shorter than ``n_steps`` keeps its final
    probabilities."""
    staged = np.empty((len(lengths), n_steps, n_classes))
    for sl, x, mask in inference_batches(values, lengths, batch_size, device):
        z, _ = module.encode(x, mask)
        probs = torch.softmax(module.logits(z), dim=-1).double().cpu().numpy()
        t_b = probs.shape[1]
        staged[sl, :t_b] = probs
        staged[sl, t_b:] = probs[:, -1:]
    return staged
