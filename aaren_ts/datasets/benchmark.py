"""Zero-argument dataset loaders and splitters for sktime's classification and forecasting benchmarks.

``add_task(dataset_loader, cv_splitter, scorers)`` of sktime's ``ClassificationBenchmark`` and
``ForecastingBenchmark`` calls ``dataset_loader()`` with no arguments; a classification loader returns
``(X, y)``, a forecasting loader returns ``y`` (a DataFrame). The task id defaults to
``"[dataset=<loader.__name__>]_..."``, so the loaders here carry the dataset's name as ``__name__``
(a ``functools.partial`` has none). They pickle, for parallel backends.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from sklearn.model_selection import PredefinedSplit

from ._registry import _classification_info, _forecasting_info
from .protocol import DEFAULT_INPUT_LENGTH, get_split, split_borders

__all__ = [
    "DatasetLoader",
    "forecasting_loader",
    "protocol_cv",
    "uea_archive_cv",
    "uea_loader",
]


class DatasetLoader:
    """A zero-argument callable that loads one dataset, named for sktime's benchmark task ids.

    Parameters
    ----------
    function : callable
        The loader to call.
    label : str
        ``__name__`` of the callable (sktime's benchmarks use it in the task id); positional only.
    **kwargs
        Keyword arguments passed to ``function`` on each call.
    """

    def __init__(self, function: Callable[..., Any], label: str, /, **kwargs: Any) -> None:
        self.function = function
        self.__name__ = label
        self.kwargs = kwargs

    def __call__(self) -> Any:
        """Load the data: ``function(**kwargs)``."""
        return self.function(**self.kwargs)

    def __repr__(self) -> str:
        arguments = ", ".join(f"{key}={value!r}" for key, value in self.kwargs.items())
        return f"DatasetLoader({self.function.__name__}, {self.__name__!r}, {arguments})"


def uea_loader(name: str, split: str | None = None, **kwargs: Any) -> DatasetLoader:
    """A zero-argument loader of a UEA dataset, for ``ClassificationBenchmark.add_task``.

    Parameters
    ----------
    name : str
        The UEA dataset.
    split : {"train", "test"} or None, default=None
        As in :func:`load_uea`; None (TRAIN then TEST) goes with :func:`uea_archive_cv`.
    **kwargs
        Passed to :func:`load_uea` (``data_home``, ``return_type``, ...).

    Returns
    -------
    DatasetLoader
        Calling it returns ``(X, y)``; its ``__name__`` is the dataset's name (with the split, if any).

    Examples
    --------
    >>> from sktime.benchmarking.classification import ClassificationBenchmark  # doctest: +SKIP
    >>> from sklearn.metrics import accuracy_score  # doctest: +SKIP
    >>> bench = ClassificationBenchmark()  # doctest: +SKIP
    >>> bench.add_task(uea_loader("JapaneseVowels"), uea_archive_cv("JapaneseVowels"),
    ...                [accuracy_score])  # doctest: +SKIP
    """
    from .uea import load_uea

    info = _classification_info(name)
    label = info.name if split is None else f"{info.name}_{split.lower()}"
    return DatasetLoader(load_uea, label, name=info.name, split=split, **kwargs)


def uea_archive_cv(name: str) -> PredefinedSplit:
    """The archive's TRAIN/TEST split as a one-fold splitter over ``load_uea(name)`` (TRAIN cases first).

    Parameters
    ----------
    name : str
        The UEA dataset.

    Returns
    -------
    sklearn.model_selection.PredefinedSplit
        One fold: train = the TRAIN cases, test = the TEST cases.
    """
    info = _classification_info(name)
    return PredefinedSplit(np.r_[np.full(info.n_train, -1), np.zeros(info.n_test, dtype=int)])


def _load_forecasting_part(
    name: str, split: str | None, input_length: int, scale: bool, **kwargs: Any
) -> Any:
    from .forecasting import load_forecasting
    from .protocol import fit_scaler

    data = load_forecasting(name, **kwargs)
    part = data if split is None else get_split(data, name, split, input_length)  # type: ignore[arg-type]
    if scale:
        scaled = fit_scaler(data, name).transform(part.to_numpy())
        part = pd.DataFrame(scaled, index=part.index, columns=part.columns)
    return part


def forecasting_loader(
    name: str,
    split: str | None = None,
    *,
    input_length: int = DEFAULT_INPUT_LENGTH,
    scale: bool = False,
    data_home: str | os.PathLike[str] | None = None,
    **kwargs: Any,
) -> DatasetLoader:
    """A zero-argument loader of a forecasting dataset (or one protocol part), for ``ForecastingBenchmark``.

    Parameters
    ----------
    name : str
        A forecasting dataset.
    split : {"train", "val", "test"} or None, default=None
        None: the whole series; otherwise the protocol part (validation and test start ``input_length``
        rows early), to evaluate with :func:`protocol_cv`.
    input_length : int, default=96
        The input length ``L``.
    scale : bool, default=False
        Standardise with the training part's statistics (the protocol computes metrics on scaled data).
    data_home : str or path-like, optional
        The data folder.
    **kwargs
        Passed to :func:`load_forecasting`.

    Returns
    -------
    DatasetLoader
        Calling it returns a DataFrame ``y``.
    """
    info = _forecasting_info(name)
    if split is not None:
        split_borders(info.name, input_length)  # fail early on a bad input length
        if split not in ("train", "val", "test"):
            raise ValueError(f"split must be 'train', 'val', 'test' or None, got {split!r}")
    label = info.name if split is None else f"{info.name}_{split}"
    return DatasetLoader(
        _load_forecasting_part,
        label,
        name=info.name,
        split=split,
        input_length=input_length,
        scale=scale,
        data_home=data_home,
        **kwargs,
    )


def protocol_cv(input_length: int = DEFAULT_INPUT_LENGTH, horizon: int = 96) -> Any:
    """sktime splitter that yields the protocol's stride-1 windows of one part.

    Applied to a part of ``m`` rows (``forecasting_loader(name, split="test")()``) it yields
    ``m - input_length - horizon + 1`` folds: train window ``input_length`` rows, forecasting horizon
    ``1..horizon``; the same windows as :func:`sliding_windows`.

    Parameters
    ----------
    input_length : int, default=96
        Input length ``L`` (the splitter's ``window_length``).
    horizon : int, default=96
        Horizon ``T`` (``fh = 1..T``).

    Returns
    -------
    sktime.split.SlidingWindowSplitter
    """
    from sktime.split import SlidingWindowSplitter

    return SlidingWindowSplitter(
        fh=np.arange(1, horizon + 1), window_length=input_length, step_length=1, start_with_window=True
    )
