"""sklearn/sktime estimators built on Aaren, trained with skorch.

The estimators themselves are importable from the package root (``from aaren_ts import
AarenForecaster``); this package also gives the declared decision steps of the forecaster's ``fit``
and the helpers that read its ``fit_report_``.
"""

from aaren_ts.estimators._fit_report import (
    FIT_STEPS,
    SKIPPABLE_STEPS,
    FitStep,
    format_fit_report,
    summarize_fit_report,
)

__all__ = ["FIT_STEPS", "SKIPPABLE_STEPS", "FitStep", "format_fit_report", "summarize_fit_report"]
