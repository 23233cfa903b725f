"""skorch plumbing shared by the aaren_ts estimators: devices, seeding, callbacks, validation split.

Everything here is small and stateless, so an estimator can build its skorch net inside ``fit`` from
its constructor parameters (as sklearn requires) and stay picklable and clonable.

* :func:`resolve_device` turns ``"auto"`` / ``None`` into a concrete torch device string.
* :func:`torch_seed` derives one integer seed from an sklearn-style ``random_state``, and
  :func:`seeded` runs a block with the torch RNGs forked and seeded, so weight initialisation, dropout
  and the shuffling of skorch's data loader are reproducible without touching the caller's global RNG.
* :func:`make_train_split` builds skorch's ``train_split`` (a stratified hold-out taken from the
  training data) or ``None`` when there is too little data to hold some out.
* :func:`make_callbacks` assembles the skorch callbacks: early stopping (only with a validation split),
  the mean of the best epochs' weights (when asked for), a progress bar when ``verbose > 0`` (see
  :func:`progress_bar`), then the user's own callbacks;
  :func:`progress_params` sends skorch's epoch table through :func:`print_epoch_line`, which drops
  its colour codes where the output is not a terminal.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import re
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch
from sklearn.utils import check_random_state

__all__ = [
    "OPTIMIZERS",
    "accelerator_of",
    "data_parallel_net_class",
    "is_terminal",
    "make_callbacks",
    "make_train_split",
    "num_threads",
    "optimizer_params",
    "print_epoch_line",
    "progress_bar",
    "progress_params",
    "resolve_device",
    "resolve_optimizer",
    "savable_params",
    "seeded",
    "torch_seed",
]


_DISTRIBUTED_HINT = (
    'training with an accelerator needs Hugging Face Accelerate, in the "distributed" extra: '
    'pip install "aaren_ts[distributed]"'
)


@functools.cache
def data_parallel_net_class(net_class: type) -> type:
    """``net_class`` trained data-parallel through Hugging Face Accelerate (skorch's ``AccelerateMixin``).

    Training batches are sharded across the processes and gradients averaged, as the mixin does. Unlike
    the mixin, validation and prediction run on the whole data in every process, without gathering:
    all processes hold the same weights, so every process computes the same validation loss and early
    stopping (or a learning-rate schedule) takes the same decision everywhere, which keeps the
    processes in step.

    Raises
    ------
    ImportError
        If accelerate is not installed, naming the extra that brings it.
    """
    try:
        from skorch.hf import AccelerateMixin
    except ImportError as err:  # (skorch.hf imports accelerate lazily; this is for old skorch)
        raise ImportError(_DISTRIBUTED_HINT) from err
    try:
        import accelerate  # noqa: F401
    except ImportError as err:
        raise ImportError(_DISTRIBUTED_HINT) from err

    class DataParallelNet(AccelerateMixin, net_class):
        # (the estimators' losses are plain callables, not modules: the mixin wraps none of them, as
        # DistributedDataParallel refuses a module without parameters)
        def get_iterator(self, dataset: Any, training: bool = False) -> Any:
            if training:
                return super().get_iterator(dataset, training=True)  # sharded across processes
            return net_class.get_iterator(self, dataset, training=False)

        def evaluation_step(self, batch: Any, training: bool = False) -> Any:
            return net_class.evaluation_step(self, batch, training=training)

    DataParallelNet.__name__ = DataParallelNet.__qualname__ = f"DataParallel{net_class.__name__}"
    return DataParallelNet


def accelerator_of(device: Any) -> Any:
    """``device`` where it is a Hugging Face ``accelerate.Accelerator`` (anything with ``prepare`` and
    ``backward``: training is then data-parallel), else ``None``."""
    if callable(getattr(device, "prepare", None)) and hasattr(device, "backward"):
        return device
    return None


def resolve_device(device: Any) -> str:
    """Return a concrete device string.

    Parameters
    ----------
    device : str, torch.device, accelerate.Accelerator or None
        ``"auto"`` or ``None`` picks ``"cuda"`` when available, else ``"cpu"``; an ``Accelerator``
        gives its process's device; anything else is passed through (``"cpu"``, ``"cuda:1"``, ...)
        after checking that torch understands it.

    Returns
    -------
    str
        The device, e.g. ``"cpu"``.

    Raises
    ------
    ValueError
        If ``device`` is not a device torch knows, or names CUDA while none is available.
    """
    accelerator = accelerator_of(device)
    if accelerator is not None:
        return str(accelerator.device)
    if device is None or device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as err:
        raise ValueError(f"device must be 'auto', 'cpu', 'cuda' or a torch device; got {device!r}") from err
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r} was requested but CUDA is not available")
    return str(dev)


def torch_seed(random_state: int | np.random.RandomState | None) -> int | None:
    """One integer seed for torch from an sklearn-style ``random_state``.

    Parameters
    ----------
    random_state : int, numpy RandomState or None
        ``None`` means "not reproducible": the function returns ``None`` and the caller should leave
        torch's global RNG as it is. An int is used as is; a ``RandomState`` is drawn from once.

    Returns
    -------
    int or None
    """
    if random_state is None:
        return None
    if isinstance(random_state, int | np.integer) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be non-negative, got {random_state}")
        return int(random_state)
    return int(check_random_state(random_state).randint(0, 2**31 - 1))


@contextlib.contextmanager
def seeded(seed: int | None, device: str = "cpu") -> Iterator[None]:
    """Run a block with torch's RNGs seeded by ``seed``, restoring them afterwards.

    With ``seed=None`` the block runs unseeded on the global RNG (nothing is forked or restored).

    Parameters
    ----------
    seed : int or None
        Seed for ``torch.manual_seed``.
    device : str, default="cpu"
        When it names a CUDA device, that device's RNG is forked and seeded too.
    """
    if seed is None:
        yield
        return
    cuda_devices = [torch.device(device)] if device.startswith("cuda") else []
    with torch.random.fork_rng(devices=cuda_devices, device_type="cuda"):
        torch.manual_seed(seed)
        yield


def make_train_split(
    y: np.ndarray | None,
    validation_fraction: float | None,
    seed: int | None,
    *,
    stratified: bool = True,
    min_valid: int = 1,
) -> Any:
    """skorch ``train_split``: a hold-out of the *training* data, or ``None``.

    Parameters
    ----------
    y : ndarray or None
        Targets (integer class codes when ``stratified``), used to decide whether a split is possible.
    validation_fraction : float or None
        Fraction of the training data held out for validation/early stopping; ``None`` or ``0``
        disables the split.
    seed : int or None
        Seed of the split, so the same ``random_state`` holds out the same samples.
    stratified : bool, default=True
        Keep class proportions in the split (classification).
    min_valid : int, default=1
        Smallest acceptable number of validation samples; below it no split is made.

    Returns
    -------
    skorch.dataset.ValidSplit or None
        ``None`` when the split is disabled or impossible (too few samples, or a class with fewer than
        two members when stratified).
    """
    from skorch.dataset import ValidSplit

    if not validation_fraction:
        return None
    if not 0.0 < validation_fraction < 1.0:
        raise ValueError(f"validation_fraction must be in (0, 1) or None, got {validation_fraction}")
    if y is None:
        return None
    n = len(y)
    n_valid = int(np.floor(validation_fraction * n))
    if n_valid < min_valid or n - n_valid < 2:
        return None
    if stratified:
        _, counts = np.unique(y, return_counts=True)
        if counts.min() < 2 or n_valid < len(counts) or n - n_valid < len(counts):
            return None
    return ValidSplit(cv=float(validation_fraction), stratified=stratified, random_state=seed)


def make_callbacks(
    *,
    verbose: int,
    early_stopping: bool,
    patience: int = 10,
    monitor: str = "valid_loss",
    lower_is_better: bool = True,
    lr_scheduler: Any | None = None,
    user_callbacks: Sequence[Any] | None = None,
    average_best_epochs: int = 1,
) -> list[tuple[str, Any]]:
    """The skorch callbacks of an estimator, named.

    Parameters
    ----------
    verbose : int
        ``> 0`` adds a progress bar where one can be shown (:func:`progress_bar`).
    early_stopping : bool
        Add ``EarlyStopping`` on ``monitor`` that restores the best epoch's weights at the end
        (``load_best=True``). Needs a validation split.
    patience : int, default=10
        Epochs without improvement before stopping.
    monitor, lower_is_better
        What early stopping watches.
    lr_scheduler : skorch.callbacks.LRScheduler, optional
        The learning-rate schedule, first in the list (named ``"lr_scheduler"``).
    user_callbacks : sequence, optional
        Extra skorch callbacks, as instances or ``(name, callback)`` pairs; they are cloned, so the
        estimator's own parameter is never mutated by training.
    average_best_epochs : int, default=1
        ``> 1`` adds a :class:`~aaren_ts.estimators._weight_averaging.BestEpochsAverage` of that
        many epochs after early stopping: the network ends with the mean of the weights of the epochs
        with the lowest validation loss.

    Returns
    -------
    list of (str, skorch.callbacks.Callback)
    """
    from sklearn.base import clone
    from skorch.callbacks import EarlyStopping

    callbacks: list[tuple[str, Any]] = [] if lr_scheduler is None else [("lr_scheduler", lr_scheduler)]
    if early_stopping:
        callbacks.append(
            (
                "early_stopping",
                EarlyStopping(
                    monitor=monitor, patience=patience, lower_is_better=lower_is_better, load_best=True
                ),
            )
        )
    if average_best_epochs > 1:
        from aaren_ts.estimators._weight_averaging import BestEpochsAverage

        callbacks.append(("best_epochs_average", BestEpochsAverage(int(average_best_epochs))))
    bar = progress_bar() if verbose and verbose > 0 else None
    if bar is not None:
        callbacks.append(("progress_bar", bar))
    for i, item in enumerate(user_callbacks or ()):
        if isinstance(item, tuple | list):
            name, cb = item
        else:
            name, cb = f"user_{i}_{type(item).__name__}", item
        callbacks.append((str(name), clone(cb) if hasattr(cb, "get_params") else cb))
    return callbacks


def progress_bar() -> Any:
    """skorch's ``ProgressBar`` of the kind the output can show, or ``None`` where none fits.

    In a Jupyter notebook: the notebook bar (a widget) when ipywidgets is installed, otherwise the
    text bar, which notebooks show as well (skorch would ask for the widget and fail without
    ipywidgets). Elsewhere: the text bar when standard error is a terminal; none when it goes to a file
    or a pipe, where a bar redrawn in place leaves only clutter (the epoch table still shows progress).

    Returns
    -------
    skorch.callbacks.ProgressBar or None
    """
    from skorch.callbacks import ProgressBar

    if ProgressBar().in_ipynb():
        return ProgressBar(detect_notebook=importlib.util.find_spec("ipywidgets") is not None)
    if is_terminal(sys.stderr):
        return ProgressBar(detect_notebook=False)
    return None


#: A colour code (ANSI SGR sequence), as skorch's epoch table marks the best values with.
_COLOUR_CODE = re.compile(r"\x1b\[[0-9;]*m")


def print_epoch_line(text: str) -> None:
    """Print a line of skorch's epoch table: in colour on a terminal, as plain text anywhere else."""
    out = sys.stdout
    print(text if is_terminal(out) else _COLOUR_CODE.sub("", text), file=out, flush=True)


def progress_params(verbose: int) -> dict[str, Any]:
    """skorch net parameters for the epoch table: :func:`print_epoch_line` as its sink when ``verbose``.

    With ``verbose=0`` skorch prints no table and its default stays (a sink of its own would be called
    even then).
    """
    return {"callbacks__print_log__sink": print_epoch_line} if verbose > 0 else {}


def is_terminal(stream: Any) -> bool:
    """Whether ``stream`` is a terminal (False for a file, a pipe, a closed stream or no stream)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed stream
        return False


@contextlib.contextmanager
def num_threads(n: int | None) -> Iterator[None]:
    """Run a block with ``torch.set_num_threads(n)``, restoring the previous count afterwards.

    Small networks gain little from intra-op parallelism, and on a busy machine extra threads that spin
    while waiting for a core can slow training down by an order of magnitude; estimators expose this as
    a parameter. ``None`` leaves torch's setting alone.
    """
    if n is None:
        yield
        return
    if int(n) < 1:
        raise ValueError(f"the number of threads must be a positive integer or None, got {n!r}")
    previous = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(previous)


#: Optimizers that can be named by string (case-insensitive).
OPTIMIZERS: dict[str, type[torch.optim.Optimizer]] = {
    "adam": torch.optim.Adam,
    "adamw": torch.optim.AdamW,
    "sgd": torch.optim.SGD,
    "rmsprop": torch.optim.RMSprop,
}


def optimizer_params(optimizer: type[torch.optim.Optimizer]) -> dict[str, Any]:
    """skorch's ``optimizer__*`` arguments this library adds for an optimizer class: ``foreach=True``
    where its constructor takes ``foreach`` (every ``torch.optim`` optimizer), else none.

    torch applies the update one parameter at a time on CPU unless asked for its multi-tensor
    ("foreach") implementation, which does the same arithmetic on all of them at once: the same
    weights to the last bit, in less time where there are many small parameters (timings in
    :doc:`/design_notes/classifier_optimizer_foreach`)."""
    import inspect

    try:
        accepted = inspect.signature(optimizer).parameters
    except (TypeError, ValueError):  # (no signature to read: add nothing)
        return {}
    return {"optimizer__foreach": True} if "foreach" in accepted else {}


def resolve_optimizer(optimizer: str | type) -> type[torch.optim.Optimizer]:
    """The optimizer class for an estimator's ``optimizer`` parameter (a name or a class).

    Raises
    ------
    ValueError
        For an unknown name (the message lists the known ones).
    TypeError
        For anything that is neither a string nor a ``torch.optim.Optimizer`` subclass.
    """
    if isinstance(optimizer, str):
        try:
            return OPTIMIZERS[optimizer.lower()]
        except KeyError:
            raise ValueError(
                f"optimizer must be one of {sorted(OPTIMIZERS)} or a torch optimizer class, got {optimizer!r}"
            ) from None
    if isinstance(optimizer, type) and issubclass(optimizer, torch.optim.Optimizer):
        return optimizer
    raise TypeError(f"optimizer must be a string or a torch.optim.Optimizer subclass, got {optimizer!r}")


def savable_params(params: dict[str, Any]) -> dict[str, Any]:
    """Constructor parameters as plain data for a non-pickle save.

    Callbacks are dropped and an accelerator saved as ``device="auto"`` (they are objects; a saved model
    loads in one process), an optimizer class is stored by its
    ``torch.optim`` name, and a ``RandomState`` seed by ``None``.

    Raises
    ------
    ValueError
        If the optimizer is a class outside ``torch.optim`` (it could not be restored by name).
    """
    params = dict(params, callbacks=None)
    if accelerator_of(params.get("device")) is not None:
        params["device"] = "auto"
    opt = params.get("optimizer")
    if opt is not None and not isinstance(opt, str):
        if getattr(torch.optim, opt.__name__, None) is not opt:
            raise ValueError(
                f"cannot save optimizer {opt!r} by name: only torch.optim optimizers (or names) can be saved "
                "without pickle; use serialization_format='pickle'"
            )
        params["optimizer"] = opt.__name__.lower()
    if not isinstance(params.get("random_state"), int | type(None)):
        params["random_state"] = None
    return params
