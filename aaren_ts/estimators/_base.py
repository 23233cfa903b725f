"""What both estimators do alike: check parameters, run torch, build the skorch net, scale, save.

:class:`AarenEstimatorMixin` sits before sktime's base class in each estimator's bases. It holds no
state of its own; it turns the constructor parameters the estimators share (see
:data:`~aaren_ts.estimators._params.SHARED_CONSTRAINTS` and the docs' parameter table) into the
objects training needs, in the same way for both:

* :meth:`~AarenEstimatorMixin._validate_params` checks the estimator's parameter table;
* :meth:`~AarenEstimatorMixin._torch_context` runs a block with the estimator's torch threads and seed;
* :meth:`~AarenEstimatorMixin._build_net` makes the skorch net (optimizer, learning rate, batches,
  device, callbacks: learning-rate schedule, early stopping, progress bar, the user's own);
* :func:`standardization` computes per-channel scaling statistics;
* :meth:`~AarenEstimatorMixin.save` / :meth:`~AarenEstimatorMixin.load` write and read a fitted
  estimator without pickle, through two hooks each estimator implements: ``_fitted_attributes()``
  (plain data: fitted attributes and stream state) and ``_restore_fitted(attributes, state_dict)``.

The estimators keep what differs: what they predict and how they stream.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import os
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch
from sklearn.exceptions import NotFittedError as _SklearnNotFittedError
from sktime.exceptions import NotFittedError as _SktimeNotFittedError

from aaren_ts.estimators._params import Constraint, validate_params
from aaren_ts.estimators._persistence import load_archive, save_archive
from aaren_ts.estimators._progress import EpochProgress
from aaren_ts.estimators._skorch import (
    accelerator_of,
    data_parallel_net_class,
    make_callbacks,
    num_threads,
    optimizer_params,
    progress_params,
    resolve_device,
    resolve_optimizer,
    savable_params,
    seeded,
    torch_seed,
)
from aaren_ts.nn import EncoderConfig
from aaren_ts.nn.ensemble import member_seed
from aaren_ts.utils.signing import key_bytes

__all__ = ["AarenEstimatorMixin", "NotFittedError", "standardization"]

#: A channel whose standard deviation is below this (relative to its mean's magnitude) is constant:
#: it is centred but not divided, so it never blows up.
_SCALE_FLOOR = 1e-8
_MISSING = object()


class NotFittedError(_SklearnNotFittedError, _SktimeNotFittedError):
    """Raised when a method needs a fitted estimator: scikit-learn's and sktime's ``NotFittedError``
    at once (both are ``ValueError`` and ``AttributeError``), so either library's handlers catch it."""


def standardization(values: np.ndarray, enabled: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel mean and standard deviation of ``values`` ``(n_points, n_channels)``.

    Parameters
    ----------
    values : ndarray of shape (n_points, n_channels)
        Training observations.
    enabled : bool, default=True
        ``False`` returns the identity scaling (mean 0, scale 1).

    Returns
    -------
    mean, scale : ndarray of shape (n_channels,), float64
        Over the finite values of each channel (NaN marks a missing one); a (nearly) constant channel
        gets scale 1, a channel with no finite value mean 0 and scale 1.
    """
    values = np.asarray(values, dtype=np.float64)
    n_channels = values.shape[-1]
    if not enabled:
        return np.zeros(n_channels), np.ones(n_channels)
    observed = np.isfinite(values)
    count = observed.sum(axis=0)
    filled = np.where(observed, values, 0.0)
    mean = filled.sum(axis=0) / np.maximum(count, 1)
    with np.errstate(over="ignore"):  # (a spread that overflows is refused where the scale is checked)
        scale = np.sqrt(np.where(observed, (values - mean) ** 2, 0.0).sum(axis=0) / np.maximum(count, 1))
    scale[~(scale > _SCALE_FLOOR * np.maximum(1.0, np.abs(mean)))] = 1.0
    return mean, scale


def _check_weights(state_dict: Any) -> None:
    """Refuse saved weights that are not a dict of tensors, or that hold NaN or infinite values."""
    if not isinstance(state_dict, dict) or not all(isinstance(t, torch.Tensor) for t in state_dict.values()):
        raise ValueError("the saved weights are not a dict of tensors")
    for name, tensor in state_dict.items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            raise ValueError(f"the saved weight {name!r} holds NaN or infinite values (a diverged fit?)")


def _check_weight_dtypes(saved: dict[str, torch.Tensor], loaded: dict[str, torch.Tensor]) -> None:
    """Refuse saved weights of another dtype than the network's (loading would convert them silently)."""
    for name, tensor in loaded.items():
        if name in saved and saved[name].dtype != tensor.dtype:
            raise ValueError(
                f"the saved weight {name!r} has dtype {saved[name].dtype}; the network's is {tensor.dtype}"
            )


class AarenEstimatorMixin:
    """Shared machinery of :class:`~aaren_ts.AarenClassifier` and :class:`~aaren_ts.AarenForecaster`.

    Subclasses define ``_parameter_constraints`` (their whole parameter table) and the persistence
    hooks ``_fitted_attributes`` and ``_restore_fitted``.
    """

    _parameter_constraints: ClassVar[dict[str, Constraint]] = {}

    # Public override kept: sktime's reset deletes every attribute that is not a parameter, including
    # the callback context a scikit-learn meta-estimator (a Pipeline) attaches while it fits this
    # estimator; losing it breaks that meta-estimator. Everything else is sktime's reset.
    def reset(self) -> Any:
        """Return to the unfitted state (sktime's ``reset``), keeping a scikit-learn meta-estimator's
        callback context if one is attached."""
        ctx = self.__dict__.get("_parent_callback_ctx", _MISSING)
        super().reset()
        if ctx is not _MISSING:
            self._parent_callback_ctx = ctx
        return self

    def _store_init_params(self, arguments: dict[str, Any]) -> None:
        """Store every constructor argument, unchanged, as the attribute of the same name (what
        scikit-learn requires of ``__init__``); call it with ``locals()`` first thing in ``__init__``."""
        for name in inspect.signature(type(self).__init__).parameters:
            if name != "self":
                setattr(self, name, arguments[name])

    def _all_or_nothing(self, fit: Callable[[], Any], trains: bool = True) -> Any:
        """Run ``fit`` (sktime's ``fit`` or ``update``, which set attributes before they train); if it
        raises, anything included (bad input, a failure while training, an interrupt), put every
        attribute back, so a fitted model and its streams are left as they were. Training builds new
        networks and streams; weights it fine-tunes in place (after ``pretrain``, or with ``trains``
        in ``update``) are put back too."""
        before = dict(self.__dict__)
        net = before.get("net_")
        weights = None if net is None or not trains else copy.deepcopy(net.module_.state_dict())
        try:
            return fit()
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            if weights is not None:
                net.module_.load_state_dict(weights)
            raise

    # Public override kept: sktime raises its own NotFittedError, which scikit-learn's checks and
    # meta-estimators do not recognise; this one is both libraries' exception.
    def check_is_fitted(self, method_name: str | None = None) -> None:
        """Raise :class:`NotFittedError` (scikit-learn's and sktime's) if the estimator is not fitted.

        Parameters
        ----------
        method_name : str, optional
            The method that needs a fitted estimator, named in the message.
        """
        if not getattr(self, "_is_fitted", False):
            raise NotFittedError(
                f"This {type(self).__name__} instance has not been fitted yet; call 'fit' with appropriate "
                "arguments before using this estimator"
                + (f" (method {method_name!r})" if method_name else "")
            )

    # ------------------------------------------------------------------ parameters
    def _validate_params(self) -> None:
        """Check every constructor parameter; raise ``ValueError``/``TypeError`` naming a bad one."""
        params = self.get_params(deep=False)
        validate_params(params, self._parameter_constraints, type(self).__name__)
        try:
            self._encoder_config()  # the encoder's sizes, checked where they are defined
        except ValueError as err:
            raise ValueError(f"{type(self).__name__}: {err}") from err
        resolve_optimizer(self.optimizer)
        resolve_device(self.device)
        torch_seed(self.random_state)

    def _encoder_config(self) -> EncoderConfig:
        """The encoder's kind and sizes from the constructor parameters."""
        return EncoderConfig(
            backbone=self.backbone,
            d_model=int(self.d_model),
            n_heads=int(self.n_heads),
            n_layers=int(self.n_layers),
            d_ff=int(self.d_ff),
            dropout=float(self.dropout),
        )

    # ------------------------------------------------------------------ running torch
    @contextlib.contextmanager
    def _torch_context(self, seed: bool = False, member: int = 0) -> Iterator[None]:
        """Run a block with ``num_threads`` torch threads and, with ``seed``, torch's RNG seeded from
        ``random_state`` (forked: the caller's global RNG is left alone), for an ensemble's member
        ``member`` (:func:`~aaren_ts.nn.ensemble.member_seed`)."""
        device = self._resolved_device()
        torch_rng = member_seed(torch_seed(self.random_state), member) if seed else None
        with num_threads(self.num_threads), seeded(torch_rng, device):
            yield

    def _resolved_device(self) -> str:
        """The device this estimator computes on: the accelerator's when training data-parallel."""
        return resolve_device(self.device)

    # ------------------------------------------------------------------ skorch
    def _lr_scheduler(self, max_epochs: int) -> Any:
        """skorch's ``LRScheduler`` for ``lr_schedule`` (stepped once per epoch; a cosine over
        ``max_epochs``), or ``None``."""
        from skorch.callbacks import LRScheduler

        if self.lr_schedule == "cosine":
            return LRScheduler(policy="CosineAnnealingLR", T_max=int(max_epochs))
        if self.lr_schedule == "exponential" and float(self.lr_decay) < 1.0:
            return LRScheduler(policy="ExponentialLR", gamma=float(self.lr_decay))
        return None

    def _build_net(
        self, net_class: type, module: type[torch.nn.Module], module_params: dict[str, Any], criterion: Any,
        train_split: Any = None, with_callbacks: bool = True, own_use: bool = False,
        average_best_epochs: int = 1, max_epochs: int | None = None, **net_params: Any,
    ) -> Any:  # fmt: skip
        """The skorch net of this estimator (not yet initialised or trained).

        Parameters
        ----------
        net_class : type
            ``skorch.NeuralNet`` or a subclass.
        module : type
            The torch module class.
        module_params : dict
            Its constructor arguments (without the ``module__`` prefix).
        criterion : callable
            The training loss: a plain callable with its arguments bound (``functools.partial``), not
            a module, so skorch moves nothing of it to a device.
        train_split : skorch train split or None
            The validation hold-out; early stopping is used only with one.
        with_callbacks : bool, default=True
            ``False`` builds the net without callbacks (to load saved weights into).
        own_use : bool, default=False
            ``True`` for a network trained on part of the data for the estimator's own use: without
            the user's ``callbacks`` (they should not see its epochs) and without printed progress.
        average_best_epochs : int, default=1
            ``> 1``: the network ends training with the mean of the weights of that many epochs with
            the lowest validation loss (:func:`~aaren_ts.estimators._skorch.make_callbacks`).
        max_epochs : int, optional
            The epochs to train (and the learning-rate schedule's length); default: the estimator's
            ``max_epochs``.
        **net_params
            Estimator-specific net parameters; they override the shared ones.
        """
        callbacks = None
        # skorch's epoch table and batch bar from verbose=2; verbose=1 shows the fit's own progress
        verbose = 0 if own_use or int(self.verbose) < 2 else int(self.verbose)
        epochs = int(self.max_epochs if max_epochs is None else max_epochs)
        if with_callbacks:
            callbacks = make_callbacks(
                verbose=verbose,
                early_stopping=self.patience is not None and train_split is not None,
                patience=int(self.patience or 1),
                lr_scheduler=self._lr_scheduler(epochs),
                user_callbacks=None if own_use else self.callbacks,
                average_best_epochs=average_best_epochs,
            )
            if int(self.verbose) >= 1:
                # (first: early stopping ends training by raising in its own on_epoch_end)
                callbacks.insert(0, ("epoch_progress", EpochProgress()))
        params: dict[str, Any] = {
            "module": module,
            "criterion": criterion,
            **{f"module__{name}": value for name, value in module_params.items()},
            "optimizer": resolve_optimizer(self.optimizer),
            "optimizer__weight_decay": float(self.weight_decay),
            **optimizer_params(resolve_optimizer(self.optimizer)),
            "lr": float(self.lr),
            "batch_size": int(self.batch_size),
            "max_epochs": epochs,
            "train_split": train_split,
            "callbacks": callbacks,
            "iterator_train__shuffle": True,
            "device": resolve_device(self.device),
            "verbose": verbose,
            **progress_params(verbose),
        }
        accelerator = accelerator_of(self.device)
        if accelerator is not None:  # data-parallel: the accelerator places modules and batches
            net_class = data_parallel_net_class(net_class)
            params.update(device=None, accelerator=accelerator)
        return net_class(**{**params, **net_params})

    # ------------------------------------------------------------------ export
    def to_onnx(self, path: str | os.PathLike, signing_key: bytes | str | None = None) -> Path:
        """Write one streaming step of the fitted model, with its streams' state, as an ONNX file.

        The graph advances a batch of streams (a dynamic axis) by one observation each: its inputs
        are the new observations and every state tensor, its outputs the forecast (forecaster: mean
        and standard deviation in original units; with online interval calibration the state holds the
        calibrated levels, from which the streamer reads the intervals) or the class probabilities
        (classifier), then the new state.
        Standardisation happens inside the graph. The file also carries the state to start from: the
        forecaster's streams as they are now, an empty stream for the classifier; and a SHA-256
        checksum of its bytes, which :class:`aaren_ts.onnx.OnnxStreamer` verifies before serving it
        with ONNX Runtime and numpy alone. The file is written atomically (a temporary file renamed
        onto ``path``): a crash while exporting leaves the previous file intact.

        Needs the ``onnx`` extra (``pip install "aaren_ts[onnx]"``) and the Aaren backbone (the
        Transformer's KV cache grows with every observation). A forecaster fitted with covariates takes
        them at every step (input ``X``); the future-known ones' effect on a forecast is added by the
        streamer from their future values.

        Parameters
        ----------
        path : str or path-like
            The file to write (conventionally ``*.onnx``).
        signing_key : bytes or str, optional
            Sign the file with this secret key (HMAC-SHA256, at least 16 bytes) for tamper evidence:
            :class:`~aaren_ts.onnx.OnnxStreamer` given the same key refuses a file altered since. The
            checksum detects damage only.

        Returns
        -------
        pathlib.Path
            The file written.
        """
        self.check_is_fitted("to_onnx")
        if signing_key is not None:
            key_bytes(signing_key)  # (a bad key is refused before the export's work)
        return self._export_onnx(path, signing_key)

    def _export_onnx(self, path: str | os.PathLike, signing_key: bytes | str | None) -> Path:
        """Export through :mod:`aaren_ts.onnx.export` (each estimator passes its network and state)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ persistence
    def _fitted_attributes(self) -> dict[str, Any]:
        """Everything besides the weights and parameters that a fitted estimator needs (plain data)."""
        raise NotImplementedError

    def _restore_fitted(self, attributes: dict[str, Any], state_dict: dict[str, torch.Tensor]) -> None:
        """Rebuild the fitted estimator from :meth:`_fitted_attributes` output and the weights."""
        raise NotImplementedError

    def _check_savable(self) -> None:
        """Raise if there is no trained network to save (sktime's ``check_is_fitted`` by default)."""
        self.check_is_fitted()

    def save(
        self,
        path: str | os.PathLike | None = None,
        serialization_format: str = "safe",
        signing_key: bytes | str | None = None,
    ) -> Any:
        """Write the fitted estimator to a ``.zip`` file whose load never runs code from the file.

        The archive holds the weights, the constructor parameters, the fitted attributes and the
        ongoing stream state in an entry read with ``torch.load(weights_only=True)``, which refuses
        anything but tensors and plain data. :meth:`load` reads only that entry, so loading a file from
        an untrusted source cannot execute code. The archive also has the ``_metadata`` entry through
        which :func:`sktime.base.load` finds the class: that function *unpickles* it, so use it only
        on files you trust. skorch callbacks are not stored; an optimizer class is stored by its
        ``torch.optim`` name (another class needs ``serialization_format="pickle"``).

        Parameters
        ----------
        path : str or path-like or None
            Destination; ``".zip"`` is appended unless present (as in sktime: ``save("model")`` writes
            ``model.zip``). ``None`` returns sktime's in-memory pickle ``(cls, bytes)`` instead.
        serialization_format : {"safe", "pickle", "cloudpickle"}, default="safe"
            ``"safe"`` writes the format above; the others are sktime's pickle-based formats.
        signing_key : bytes or str, optional
            Sign the archive with this secret key (HMAC-SHA256, at least 16 bytes) for tamper
            evidence: :meth:`load` with the same key refuses a file altered since. The archive's
            checksums detect damage only. ``"safe"`` format only.

        Returns
        -------
        pathlib.Path or object
            The file written (``"safe"``), or what sktime's ``save`` returns.
        """
        if path is None or serialization_format != "safe":
            if signing_key is not None:
                raise ValueError(
                    "save: signing_key signs the 'safe' format written to a path only; got "
                    f"path={path!r}, serialization_format={serialization_format!r}"
                )
            fmt = "pickle" if serialization_format == "safe" else serialization_format
            return super().save(path, serialization_format=fmt)
        self._check_savable()
        if signing_key is not None:
            key_bytes(signing_key)  # (a bad key is refused before anything is written)
        params = savable_params(self.get_params(deep=False))
        state_dict = self.net_.module_.state_dict()
        return save_archive(path, type(self), params, state_dict, self._fitted_attributes(), signing_key)

    @classmethod
    def load(cls, path: str | os.PathLike, signing_key: bytes | str | None = None) -> Any:
        """Read an estimator written by :meth:`save`; nothing in the file is unpickled or executed.

        Parameters
        ----------
        path : str or path-like
            The file, with or without its ``.zip`` suffix.
        signing_key : bytes or str, optional
            The key the archive was signed with (:meth:`save`): an unsigned archive, or one whose
            signature does not match, is refused before anything in it is read. Without a key a
            signature is not checked.

        Returns
        -------
        estimator
            Fitted, on the device its ``device`` parameter names (``"auto"``: CUDA if present), with
            its streams where they were when saved.
        """
        payload = load_archive(path, cls, signing_key)
        shown = os.fspath(path)
        try:
            _check_weights(payload["state_dict"])
            with warnings.catch_warnings():  # an archive's removed parameters are not the user's doing
                warnings.simplefilter("ignore", FutureWarning)
                est = cls(**payload["params"])
            est._validate_params()
            est._restore_fitted(payload["attributes"], payload["state_dict"])
            _check_weight_dtypes(payload["state_dict"], est.net_.module_.state_dict())
        except ValueError as err:
            raise ValueError(f"{shown!r}: {err}") from err
        except (KeyError, IndexError, TypeError, AttributeError, RuntimeError) as err:
            # a payload that passed the archive's checks but does not fit together: altered or damaged
            raise ValueError(
                f"{shown!r} does not hold a consistent saved {cls.__name__} (altered or damaged?): "
                f"{type(err).__name__}: {err}"
            ) from err
        est._is_fitted = True
        return est

    @classmethod
    def load_from_path(cls, serial: Any) -> Any:
        """sktime's hook behind :func:`sktime.base.load` (which unpickles the archive's ``_metadata``
        entry to find this class first); reads the payload as :meth:`load` does."""
        return cls.load(serial)
