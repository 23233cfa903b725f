"""Reference figures: Aaren's results in the paper (Feng et al. 2024, *Attention as an RNN*).

The one place these numbers are typed. The dataset registry (and so the dataset cards), the
``aaren-ts`` jobs and the benchmark scripts all read them from here.

- :data:`PAPER_ACCURACY`: test accuracy (%) on the UEA multivariate archive, mean over 5 seeds.
- :data:`PAPER_MSE`: test MSE of the long-horizon forecasting protocol (input length 96, scaled data),
  by dataset and horizon; a horizon the paper has no figure for is absent.
"""

from __future__ import annotations

__all__ = ["PAPER_ACCURACY", "PAPER_MSE", "paper_accuracy", "paper_mse"]

#: Aaren's test accuracy (%) on UEA datasets in the paper (mean over 5 seeds).
PAPER_ACCURACY: dict[str, float] = {
    "JapaneseVowels": 96.65,
    "UWaveGestureLibrary": 82.00,
    "Handwriting": 27.39,
    "Heartbeat": 74.15,
    "SelfRegulationSCP1": 89.42,
    "SelfRegulationSCP2": 54.22,
    "EthanolConcentration": 29.58,
    "SpokenArabicDigits": 98.68,
    "FaceDetection": 69.06,
    "PEMS-SF": 81.85,
}

#: Aaren's test MSE in the paper, by dataset and horizon (ETTh1 has no figure at T=720).
PAPER_MSE: dict[str, dict[int, float]] = {
    "ETTh1": {96: 0.53, 192: 0.59, 336: 0.65},
    "ETTh2": {96: 0.38, 192: 0.49, 336: 0.57, 720: 0.55},
    "ETTm1": {96: 0.48, 192: 0.51, 336: 0.54, 720: 0.60},
    "ETTm2": {96: 0.24, 192: 0.34, 336: 0.41, 720: 0.51},
    "Weather": {96: 0.18, 192: 0.25, 336: 0.31, 720: 0.40},
    "ECL": {96: 0.36, 192: 0.37, 336: 0.47, 720: 0.57},
}


def paper_accuracy(name: str) -> float | None:
    """The paper's Aaren accuracy (%) on a UEA dataset, or None when the paper has none."""
    return PAPER_ACCURACY.get(name)


def paper_mse(name: str, horizon: int) -> float | None:
    """The paper's Aaren MSE on a forecasting dataset at a horizon, or None when the paper has none."""
    return PAPER_MSE.get(name, {}).get(horizon)
