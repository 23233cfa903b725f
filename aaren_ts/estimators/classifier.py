"""``AarenClassifier``: time-series classification with Aaren, an sktime and sklearn classifier.

See :class:`AarenClassifier`. The parts it is built from (training, the skorch nets, inference, the
random kernels, streams, early classification, persistence) are in
:mod:`aaren_ts.estimators.classification`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import torch
from sktime.classification.base import BaseClassifier

from aaren_ts.engine.classify import ClassifierStreams
from aaren_ts.estimators._base import AarenEstimatorMixin, standardization
from aaren_ts.estimators._deprecations import accepts_removed_parameters
from aaren_ts.estimators._docs import document_shared_parameters
from aaren_ts.estimators._inputs import SKLEARN_EXPECTED_FAILED_CHECKS, Panel, coerce_labels, to_panel
from aaren_ts.estimators._params import (
    SHARED_CONSTRAINTS,
    DistinctPositiveInts,
    Either,
    Interval,
    Optional,
    Options,
    PositiveInt,
    Size,
)
from aaren_ts.estimators._skorch import torch_seed
from aaren_ts.estimators.classification._early import EarlyClassifierMixin
from aaren_ts.estimators.classification._fitted import FittedClassifierMixin, check_training_scale
from aaren_ts.estimators.classification._inference import final_proba, scaled_values, staged_proba
from aaren_ts.estimators.classification._kernels import kernel_config, mixture_split
from aaren_ts.estimators.classification._net import ClassifierNets
from aaren_ts.estimators.classification._streaming import StreamingClassifierMixin
from aaren_ts.estimators.classification._training import (
    ClassifierTraining,
    position_frequencies,
    validation_fraction,
)
from aaren_ts.nn.classify import READOUTS, ClassifierModule, position_periods
from aaren_ts.nn.ensemble import ClassifierEnsemble

__all__ = ["SKLEARN_EXPECTED_FAILED_CHECKS", "AarenClassifier"]


@document_shared_parameters
class AarenClassifier(
    StreamingClassifierMixin, EarlyClassifierMixin, FittedClassifierMixin, AarenEstimatorMixin, BaseClassifier
):
    """Time-series classifier built on Aaren (attention as an RNN), trained with skorch.

    An sktime and scikit-learn classifier for univariate and multivariate series of equal or
    unequal length. The network is causal, so it has class probabilities after every time step
    (:meth:`staged_predict_proba`), and streams of observations are consumed chunk by chunk at O(1)
    cost per step and series (:meth:`partial_update`); :meth:`predict_early` answers as soon as it
    is confident enough. The user guide's "Classification" page explains the model, training, input
    formats, streaming and persistence.

    Parameters
    ----------
    {d_model n_heads n_layers d_ff}
    dropout : float, default=0.2
        Dropout probability in the encoder and before the head, in ``[0, 1)``. On CPU its masks come
        from 16-bit random integers (:mod:`aaren_ts.nn.dropout`), the same dropout in less time; see
        :doc:`/design_notes/classifier_dropout`.
    readout : {"mean", "last", "attention"}, default="mean"
        How the features classified at step ``t`` are formed from the encoder outputs up to ``t``:
        a causal running mean, the output at ``t``, or attention pooling with a learned query. All are
        O(1) per step from a running state.
    {backbone}
    kernel_size : int, default=3
        Taps of the causal convolution (at most 64) that embeds each step from it and the ``kernel_size - 1``
        steps before it, which gives the encoder local order (``1``: a per-step linear map). Streams keep the
        last ``kernel_size - 1`` inputs.
    dilations : tuple of int or None, default=None
        ``None``: the single convolution above. Distinct positive ints: one such convolution per
        dilation, mixed by a GELU and a linear map (receptive field ``(kernel_size - 1) *
        max(dilations) + 1``, kept by streams). See :doc:`/design_notes/classifier_stem` for the
        evidence behind the default.
    position_frequencies : int or "auto", default="auto"
        Number of sine and cosine pairs of each step's index (periods from twice the median training
        length, halved each time) added to its embedding; ``0``: none. ``"auto"``: 8 without random
        kernels, 0 with them. See :doc:`/design_notes/classifier_position` for the evidence.
    n_random_features : int, default=10000
        About this many streamed MiniRocket features (at most 200000) (:mod:`aaren_ts.nn.rocket`, see Notes),
        whose ridge classifiers' answer is mixed with the network's; ``0`` leaves the network alone. See
        :doc:`/design_notes/classifier_kernels` and :doc:`/design_notes/classifier_mixture` for the evidence
        behind the defaults.
    n_estimators : int, default=2
        Members of the ensemble (1 to 64): member ``k`` trains as a classifier seeded with
        ``random_state + 1000 k`` would, and the answer is the mean of their class distributions;
        ``fit``, prediction and streams cost about ``n_estimators`` times one classifier's. See
        :doc:`/design_notes/classifier_ensemble` for the evidence behind the default.
    normalization : {"standard", None}, default="standard"
        ``"standard"`` standardises each channel with the mean and standard deviation of all training
        time points (stored at fit, so streaming uses the same statistics); ``None`` feeds raw values.
    {optimizer}
    lr : float, default=2e-3
        Learning rate.
    {weight_decay}
    label_smoothing : float, default=0.1
        Label smoothing of the cross-entropy loss, in ``[0, 1)``.
    prefix_weight : float, default=0.0
        Weight ``w`` in ``[0, 1]`` of a loss on every prefix: training minimises ``(1 - w) * CE(whole
        series) + w * mean over t of CE(first t steps)``. ``w > 0`` trains the class distribution to be
        right early (:meth:`staged_predict_proba`, :meth:`predict_early`, streams) at no cost to prediction.
    probability_threshold : float or "auto", default="auto"
        Probability in ``(0, 1]`` the most probable class must keep for ``consecutive_predictions``
        steps before :meth:`predict_early` and the streams decide. ``"auto"`` chooses it in ``fit`` on
        held-out training series, at least 0.75 (``probability_threshold_``). See
        :doc:`/design_notes/classifier_early` for the evidence behind the default.
    consecutive_predictions : int, default=1
        Consecutive steps (``>= 1``) the rule of ``probability_threshold`` needs; the names are those of
        aeon's ``ProbabilityThresholdEarlyClassifier``.
    {lr_schedule lr_decay}
    batch_size : int, default=32
        Mini-batch size for training (inference uses larger batches).
    max_epochs : int, default=80
        Training epochs (an upper bound with early stopping). With the cosine schedule, the learning
        rate reaches 0 at ``max_epochs``.
    validation_fraction : float or None, default=None
        Fraction in ``[0, 1)`` of the *training* series held out (stratified) to report the validation
        loss and accuracy after every epoch and for early stopping; ``None`` or ``0``: none (0.1
        with a ``patience``). No split is made where a class could not be held out.
    patience : int or None, default=None
        Epochs without improvement of the validation loss before training stops and the best epoch's
        weights return; a training set too small to split trains every epoch, with a warning.
        ``None``: every one of ``max_epochs`` runs (:doc:`/design_notes/classifier_training`).
    {device}
    random_state : int, RandomState or None, default=None
        Seeds weight initialisation, dropout, the validation split and the shuffling of mini-batches:
        the same seed gives identical predictions on CPU.
    {verbose callbacks num_threads}

    Attributes
    ----------
    classes_ : ndarray
        The class labels, sorted, as in sklearn.
    n_classes_ : int
        Number of classes.
    n_channels_ : int
        Channels seen in fit; predict and streaming inputs must have as many.
    channel_mean_, channel_scale_ : ndarray of float64
        Per-channel mean and scale of the training data; every input is standardised with them in
        float64 before the networks (float32) see it.
    random_kernels_ : dict or None
        The random kernels' configuration drawn from the training series (``dilations``,
        ``n_biases``, ``seed``, ``prefix_lengths``), ``None`` with ``n_random_features=0``; those of
        the ensemble's first member (member ``k`` draws its kernels from ``seed + 1000 k``).
    position_periods_ : tuple of float or None
        The periods, in steps, of the position's sines and cosines (``position_frequencies``), from
        the median training length; ``None`` with ``position_frequencies=0``.
    probability_threshold_ : float
        The threshold of the early-decision rule (``probability_threshold``, ``"auto"`` resolved).
    net_ : skorch.NeuralNetClassifier
        The trained skorch net (``net_.module_`` is the network, a
        :class:`~aaren_ts.nn.ensemble.ClassifierEnsemble` with ``n_estimators > 1``; ``net_.history``
        the training log, every member's epochs in turn).
    streams_ : aaren_ts.engine.ClassifierStreams
        The ongoing streams and the computations on them (see :doc:`/architecture`).
    n_streams_ : int
        Number of ongoing streams (0 before the first :meth:`partial_update`).

    Notes
    -----
    **Model.** Each step is embedded by a causal convolution, encoded by Aaren layers [1]_ and pooled by
    a causal readout into the network's class scores. Beside it, about ``n_random_features`` features
    of MiniRocket's random kernels [2]_ (dilations up to an eighth of the longest training series) are
    pooled as a stream and classified by ridge classifiers, one per prefix length; for them a stream
    keeps one running sum per class and prefix length and the last ``8 * max(dilations)`` inputs. The
    answer after each step is a weighted mean of the network's and the kernels' class distributions,
    the weights chosen per prefix length on half of the training series against a network and ridge
    classifiers fitted on the other half. So ``fit`` trains ``n_estimators`` networks on all the series
    and one more, shared by the members, on half of them for half of ``max_epochs`` (the ``callbacks``
    see each training in turn). ``probability_threshold="auto"`` tunes the early-decision rule in
    ``fit`` as TEASER [3]_ tunes its own.

    **Inputs.** ``X`` may be a numpy array ``(n_instances, n_channels, n_timepoints)``, a 2D array
    ``(n_instances, n_timepoints)`` of univariate series, an sktime nested or pd-multiindex DataFrame,
    a list of DataFrames ``(n_timepoints_i, n_channels)`` or a list of numpy arrays
    ``(n_channels, n_timepoints_i)``. Series may have different lengths, in fit and in predict; a test
    series may be longer than any training series (the padding is masked and nothing depends on the
    longest length). Missing values are not supported.

    **Streaming.** :meth:`partial_update` takes the next ``k`` time points of each ongoing series (any
    container above, one entry per stream, lengths may differ, 0 allowed for a list entry). The first
    call after ``fit`` or :meth:`reset_stream` starts as many new streams as it has series; later calls
    must pass the same number, in the same order. ``predict()`` / ``predict_proba()`` without ``X``
    then return the current predictions of the streams. Feeding a series through ``partial_update`` in
    any chunking gives the probabilities ``predict_proba`` gives on the whole series (to ~1e-5).
    ``fit`` ends all streams.

    **sklearn conformance.** The estimator passes sklearn's ``parametrize_with_checks`` except the
    checks :meth:`sklearn_expected_failed_checks` returns, with their reasons (a 2D ``X`` is a panel of
    univariate series, so its column count is a series length, not a fixed feature count).
    ``n_features_in_`` is therefore not set; ``n_channels_`` is.

    **Labels.** Any labels sklearn accepts (ints, strings, ...); ``classes_`` is their sorted unique
    values. A ``y`` with a single class is accepted with a warning and that class is predicted, as
    sktime's classifier contract requires (ensembles sub-sample); streaming then raises.

    **Persistence.** Pickle works (identical predictions after a round trip, stream state included).
    :meth:`save` / :meth:`load` store the weights, constructor parameters, fitted attributes and the
    ongoing streams in a file that :meth:`load` reads without unpickling anything
    (``torch.load(weights_only=True)``); a stream saved mid-way continues bit-identically after
    loading. skorch callbacks are not saved.

    References
    ----------
    .. [1] L. Feng, F. Tung, H. Hajimirsadeghi, M. O. Ahmed, Y. Bengio and G. Mori, "Attention as an
       RNN", arXiv:2405.13956, 2024.
    .. [2] A. Dempster, D. F. Schmidt and G. I. Webb, "MiniRocket: A very fast (almost) deterministic
       transform for time series classification", Proceedings of the 27th ACM SIGKDD Conference on
       Knowledge Discovery and Data Mining, pp. 248-257, 2021.
    .. [3] P. Schäfer and U. Leser, "TEASER: early and accurate time series classification", Data
       Mining and Knowledge Discovery, 34(5), pp. 1336-1362, 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from aaren_ts import AarenClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(40, 2, 30)).astype("float32")
    >>> y = np.where(X[:, 0].mean(axis=1) > 0, "up", "down")
    >>> clf = AarenClassifier(d_model=16, n_layers=1, max_epochs=5, random_state=0)
    >>> clf = clf.fit(X, y)
    >>> clf.predict(X[:3]).shape
    (3,)
    >>> clf = clf.partial_update(X[:3, :, :10]).partial_update(X[:3, :, 10:])
    >>> np.allclose(clf.predict_proba(), clf.predict_proba(X[:3]), atol=1e-5)
    True
    """

    _tags: ClassVar[dict[str, Any]] = {
        "authors": ["aaren_ts developers"],
        "maintainers": ["aaren_ts developers"],
        "python_dependencies": ["torch", "skorch"],
        "X_inner_mtype": ["numpy3D", "df-list"],
        "y_inner_mtype": "numpy1D",
        "capability:multivariate": True,
        "capability:unequal_length": True,
        "capability:missing_values": False,
        "capability:multioutput": False,
        "capability:predict_proba": True,
        "capability:random_state": True,
        "property:randomness": "derandomized",
        "capability:multithreading": False,
    }

    _parameter_constraints: ClassVar[dict[str, Any]] = {
        **SHARED_CONSTRAINTS,
        "normalization": Options(("standard", None)),
        "readout": Options(READOUTS),
        "kernel_size": Size(64),
        "dilations": Optional(DistinctPositiveInts()),
        "n_random_features": Interval(0, 200_000, integer=True),
        "position_frequencies": Either(Options(("auto",)), Interval(0, None, integer=True)),
        "label_smoothing": Interval(0.0, 1.0, closed="left"),
        "prefix_weight": Interval(0.0, 1.0),
        "probability_threshold": Either(Options(("auto",)), Interval(0.0, 1.0, closed="right")),
        "consecutive_predictions": PositiveInt,
    }

    @accepts_removed_parameters
    def __init__(
        self,
        d_model: int = 64,
        n_heads: int = 4,
        n_layers: int = 2,
        d_ff: int = 128,
        dropout: float = 0.2,
        readout: str = "mean",
        backbone: str = "aaren",
        kernel_size: int = 3,
        dilations: tuple[int, ...] | None = None,
        n_random_features: int = 10_000,
        position_frequencies: int | str = "auto",
        n_estimators: int = 2,
        normalization: str | None = "standard",
        optimizer: Any = "adamw",
        lr: float = 2e-3,
        weight_decay: float = 1e-2,
        label_smoothing: float = 0.1,
        prefix_weight: float = 0.0,
        probability_threshold: float | str = "auto",
        consecutive_predictions: int = 1,
        lr_schedule: str | None = "cosine",
        lr_decay: float = 0.8,
        batch_size: int = 32,
        max_epochs: int = 80,
        validation_fraction: float | None = None,
        patience: int | None = None,
        device: Any = "auto",
        random_state: int | np.random.RandomState | None = None,
        verbose: int = 0,
        callbacks: list | None = None,
        num_threads: int | None = 1,
    ) -> None:
        self._store_init_params(locals())
        super().__init__()
        # sktime's BaseClassifier.__init__ pre-sets these fitted attributes; sklearn's
        # check_no_attributes_set_in_init requires that only parameters exist before fit.
        for name in ("classes_", "n_classes_", "fit_time_"):
            self.__dict__.pop(name, None)

    # ================================================================== sklearn integration
    def __sklearn_tags__(self) -> Any:
        """sklearn tags: a classifier taking 2D (univariate panel) or 3D arrays, no NaN."""
        from sklearn.utils import ClassifierTags, InputTags, Tags, TargetTags

        return Tags(
            estimator_type="classifier",
            target_tags=TargetTags(required=True, one_d_labels=True),
            classifier_tags=ClassifierTags(multi_class=True, poor_score=False),
            input_tags=InputTags(two_d_array=True, three_d_array=True, allow_nan=False),
            non_deterministic=False,
        )

    def __sklearn_is_fitted__(self) -> bool:
        return bool(getattr(self, "_is_fitted", False))

    @classmethod
    def sklearn_expected_failed_checks(cls) -> dict[str, str]:
        """sklearn estimator checks that do not apply to a time-series classifier, with reasons.

        Returns
        -------
        dict
            ``{check_name: reason}``, for ``parametrize_with_checks(expected_failed_checks=...)``:

            * ``check_n_features_in``: ``n_features_in_`` is not set (``n_channels_`` is), since the
              column count of a 2D ``X`` is a series length, not a fixed feature count.
            * ``check_n_features_in_after_fitting``: a 2D ``X`` is a panel of univariate series whose
              columns are time points; any series length is valid at predict time.
            * ``check_classifiers_train``: it requires ``predict(X.T)`` to fail, but ``X.T`` is a valid
              panel of univariate series of another length.
        """
        return dict(SKLEARN_EXPECTED_FAILED_CHECKS)

    # ================================================================== inputs
    def _panel(self, X: Any, name: str = "X", allow_empty_series: bool = False) -> Panel:
        """Validate and convert ``X``; after fit, also check its channel count."""
        panel = to_panel(X, name=name, allow_empty_series=allow_empty_series)
        n_channels = getattr(self, "n_channels_", None)
        if n_channels is not None and panel.n_channels != n_channels:
            raise ValueError(
                f"{name} has {panel.n_channels} channel(s), but {type(self).__name__} was fitted with "
                f"{n_channels}"
            )
        return panel

    @staticmethod
    def _panel_to_sktime(panel: Panel) -> Any:
        """The validated data in one of the inner mtypes: numpy3D if equal length, else df-list."""
        if (panel.lengths == panel.max_length).all():
            return panel.values.transpose(0, 2, 1)
        return [pd.DataFrame(panel.values[i, : panel.lengths[i]]) for i in range(panel.n_instances)]

    def _scaled(self, panel: Panel, name: str = "X") -> tuple[np.ndarray, np.ndarray]:
        """Scaled, zero-padded values ``(n, T, C)`` float32 and lengths (:func:`.scaled_values`)."""
        return scaled_values(panel, self.channel_mean_, self.channel_scale_, name)

    # ================================================================== fit
    def fit(self, X: Any, y: Any) -> AarenClassifier:
        """Train on a panel ``X`` with labels ``y``.

        All inputs are checked before anything changes: on a ``ValueError``/``TypeError`` (NaN/inf,
        wrong rank, empty input, non-numeric data or labels, bad hyper-parameters), or any failure
        while training (an interrupt included), a previously fitted model and its streams are left
        exactly as they were. A successful fit ends all streams.

        Parameters
        ----------
        X : panel
            See the class docstring for the accepted containers.
        y : array-like of shape (n_instances,)
            Class labels (any type sklearn accepts: ints, strings, ...). As sktime requires (for
            ensembles that sub-sample), a single class is accepted with a warning and then predicted
            for every series; a 2D ``y`` fits one classifier per column (sktime's vectorisation).

        Returns
        -------
        self
        """
        # Public override kept: sktime's fit resets the estimator *before* it checks its inputs, so bad
        # input would erase a fitted model; here every check runs first. It also accepts containers
        # sktime has no mtype for (a list of (C, T_i) arrays) and hands sktime an inner mtype. Pinned by
        # tests/estimators/test_sktime_contract.py.
        self._validate_params()
        panel = to_panel(X)
        labels = coerce_labels(y, allow_multioutput=True)
        if len(labels) != panel.n_instances:
            raise ValueError(
                f"X has {panel.n_instances} series but y has {len(labels)} labels; they must match"
            )
        sktime_panel = self._panel_to_sktime(panel)
        self._all_or_nothing(lambda: super(AarenClassifier, self).fit(sktime_panel, labels))
        # sktime fits no network for a single class (it predicts that class) or for a 2D y (one clone
        # per column); the channel count is still checked at predict time
        self.n_channels_ = panel.n_channels
        return self

    def _fit(self, X: Any, y: np.ndarray) -> AarenClassifier:
        panel = to_panel(X)
        self.n_channels_ = panel.n_channels
        mean, scale = standardization(panel.values[panel.mask()], self.normalization == "standard")
        check_training_scale(mean, scale)
        self.channel_mean_, self.channel_scale_ = mean, scale
        values, lengths = self._scaled(panel)
        codes = np.searchsorted(self.classes_, y).astype(np.int64)
        seed = torch_seed(self.random_state)
        fraction = validation_fraction(
            self.validation_fraction, self.patience is not None, codes, seed, self.max_epochs
        )
        self.random_kernels_ = kernel_config(lengths, int(self.n_random_features), seed)
        frequencies = position_frequencies(self.position_frequencies, self.n_random_features)
        self.position_periods_ = position_periods(float(np.median(lengths)), frequencies)
        mixture = mixture_split(codes, seed) if self.random_kernels_ is not None else None
        training = ClassifierTraining(
            ClassifierNets.of(self), self._torch_context, values, lengths, codes, fraction, seed, mixture,
            int(self.max_epochs), int(self.n_estimators), int(self.verbose),
        )  # fmt: skip
        trained = training.train(self.probability_threshold, int(self.consecutive_predictions))
        self.probability_threshold_ = trained.probability_threshold
        self.net_ = trained.net
        self.net_.module_.eval()
        self.streams_ = ClassifierStreams(self.net_.module_, self._device())
        return self

    # ================================================================== prediction
    def _require_network(self, what: str) -> None:
        self.check_is_fitted(what)
        if not hasattr(self, "net_"):
            reason = (
                "a 2D y (one classifier per column)"
                if getattr(self, "_is_vectorized", False)
                else "a single class (it predicts that class)"
            )
            raise ValueError(
                f"{what} needs the trained network, but this {type(self).__name__} was fitted on {reason}"
            )

    @property
    def module_(self) -> ClassifierModule | ClassifierEnsemble:
        """The trained network (``net_.module_``)."""
        self.check_is_fitted()
        return self.net_.module_

    def _device(self) -> torch.device:
        return next(self.net_.module_.parameters()).device

    @torch.no_grad()
    def _proba_from_panel(self, panel: Panel) -> np.ndarray:
        module = self.net_.module_.eval()
        values, lengths = self._scaled(panel)
        with self._torch_context():
            return final_proba(module, values, lengths, self.n_classes_, int(self.batch_size), self._device())

    def _predict_proba(self, X: Any) -> np.ndarray:
        return self._proba_from_panel(to_panel(X))

    def _predict(self, X: Any) -> np.ndarray:
        return self.classes_[np.argmax(self._predict_proba(X), axis=1)]

    # Public predict / predict_proba overrides kept: without X they return the ongoing streams'
    # predictions (sktime's methods require X). With X, the input is validated first (clear messages,
    # containers sktime has no mtype for) and handed to sktime, which calls _predict / _predict_proba.
    def predict_proba(self, X: Any = None) -> np.ndarray:
        """Class probabilities ``(n_instances, n_classes)``, columns in the order of ``classes_``.

        Parameters
        ----------
        X : panel, optional
            Series to classify. Without ``X``: the current probabilities of the ongoing streams
            (see :meth:`partial_update`).
        """
        if X is None:
            return self._stream_proba()
        self.check_is_fitted()
        return super().predict_proba(self._panel_to_sktime(self._panel(X)))

    def predict(self, X: Any = None) -> np.ndarray:
        """Class labels ``(n_instances,)``; without ``X``, those of the ongoing streams."""
        if X is None:
            return self.classes_[np.argmax(self._stream_proba(), axis=1)]
        self.check_is_fitted()
        return super().predict(self._panel_to_sktime(self._panel(X)))

    @torch.no_grad()
    def staged_predict_proba(self, X: Any) -> Iterator[np.ndarray]:
        """Class probabilities after each time step: early classification.

        Like sklearn's ``staged_predict_proba``, a generator: stage ``t`` (``t = 1 .. max length``)
        yields ``(n_instances, n_classes)`` probabilities computed from the first ``t`` time points of
        every series only (the model is causal). A series shorter than ``t`` keeps its final
        probabilities, so the last stage equals :meth:`predict_proba`.

        Parameters
        ----------
        X : panel

        Yields
        ------
        ndarray of shape (n_instances, n_classes)
        """
        self._require_network("staged_predict_proba")
        panel = self._panel(X)
        module = self.net_.module_.eval()
        values, lengths = self._scaled(panel)
        batch_size, device = int(self.batch_size), self._device()
        with self._torch_context():
            staged = staged_proba(
                module, values, lengths, panel.max_length, self.n_classes_, batch_size, device
            )
        for t in range(panel.max_length):
            yield staged[:, t].copy()

    def _export_onnx(self, path: str | os.PathLike, signing_key: bytes | str | None) -> Path:
        from aaren_ts.onnx.export import export_classifier

        self._require_network("to_onnx")
        classes = np.asarray(self.classes_).tolist()
        return export_classifier(
            self.net_.module_, path, self.channel_mean_, self.channel_scale_, classes, signing_key=signing_key
        )

    # ================================================================== sktime test parameters
    @classmethod
    def get_test_params(cls, parameter_set: str = "default") -> list[dict[str, Any]]:
        """Tiny configurations for sktime's test suite, seconds to fit (``parameter_set`` is not used;
        the random kernels in ten dilation slots, one threshold each; the second with the step's
        position)."""
        tiny = dict(d_model=8, n_heads=2, n_layers=1, d_ff=16, n_random_features=840, device="cpu")
        second = {"readout": "last", "backbone": "transformer", "validation_fraction": None}
        return [
            {**tiny, "max_epochs": 2, "batch_size": 16, "n_estimators": 1, "random_state": 0},
            {**tiny, "max_epochs": 3, **second, "position_frequencies": 4, "random_state": 1},
        ]
