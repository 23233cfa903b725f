"""One progress display for a whole fit: a bar over every training epoch, or a line a stage.

With ``verbose=1`` an estimator's ``fit`` shows its progress through :class:`FitProgress`: on a
terminal or in a notebook, one bar over every epoch the fit plans (each network's ``max_epochs``; a
network that stops early moves the bar to its end), labelled with the stage in progress (a network,
the decisions taken on held-out data); where standard error is a file or a pipe, where a bar redrawn in
place would leave clutter, one line as each stage ends, with its epochs and seconds; both on standard
error. ``verbose=0`` shows nothing; ``verbose >= 2`` prints every stage's line and skorch's epoch table
of every network, both on standard output, instead of the bar.

The fit in progress is found through a context variable (:func:`stage`, :class:`EpochProgress`), so
the code that trains a network needs no handle on it and a fit without progress costs nothing.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import importlib.util
import sys
import time
from collections.abc import Iterator
from typing import Any

from skorch.callbacks import Callback, ProgressBar

from aaren_ts.estimators._skorch import is_terminal

__all__ = ["EpochProgress", "FitProgress", "fit_progress", "note", "stage"]

_CURRENT: contextvars.ContextVar[FitProgress | None] = contextvars.ContextVar(
    "aaren_ts_fit_progress", default=None
)


@dataclasses.dataclass
class _Stage:
    label: str
    epochs: int
    clock: float
    done: int = 0


class FitProgress:
    """The progress of one fit, shown as a bar or as a line a stage (see the module's docstring).

    Parameters
    ----------
    title : str
        What is fitted, the start of every line (``"AarenForecaster.fit"``).
    planned_epochs : int
        The epochs of the networks the fit plans to train (the bar's length); a stage not planned
        (a network trained again) lengthens it.
    planned_stages : int
        How many training stages ``planned_epochs`` covers.
    bar : bool
        Draw a bar (a terminal or a notebook) rather than print a line a stage.
    stream : file-like, optional
        Where the lines and the bar go (default standard error).
    """

    def __init__(
        self, title: str, planned_epochs: int, planned_stages: int, bar: bool, stream: Any = None
    ) -> None:
        self.title = title
        self.stream = sys.stderr if stream is None else stream
        self._unplanned_stages = max(0, int(planned_stages))
        self._stages: list[_Stage] = []  # the stages in progress, innermost last
        self._started = time.perf_counter()
        self._done = 0
        self._bar = None
        if bar:
            if ProgressBar().in_ipynb() and importlib.util.find_spec("ipywidgets") is not None:
                from tqdm.notebook import tqdm
            else:
                from tqdm.std import tqdm
            self._bar = tqdm(
                total=max(0, int(planned_epochs)), desc=title, unit="epoch", file=self.stream, leave=True,
                dynamic_ncols=True,
            )  # fmt: skip

    @property
    def epochs_done(self) -> int:
        """The epochs run so far, every stage's."""
        return self._done

    def begin(self, label: str, epochs: int = 0) -> None:
        """Start the stage ``label`` (inside the stage in progress, if any), which trains for at most
        ``epochs`` epochs (0: no training of its own)."""
        epochs = max(0, int(epochs))
        if epochs and self._unplanned_stages:
            self._unplanned_stages -= 1
        elif epochs and self._bar is not None:
            self._bar.total += epochs
        self._stages.append(_Stage(label, epochs, time.perf_counter()))
        self._describe()

    def epoch(self) -> None:
        """One epoch of the innermost stage in progress has ended."""
        self._done += 1
        if not self._stages:
            return
        current = self._stages[-1]
        current.done += 1
        if self._bar is not None and current.done <= current.epochs:
            self._bar.update(1)

    def end(self) -> None:
        """The innermost stage in progress has ended: the bar moves past the epochs it did not need;
        without a bar, its line is printed."""
        current = self._stages.pop()
        if self._bar is not None:
            self._bar.update(max(0, current.epochs - current.done))
            self._describe()
            return
        seconds = time.perf_counter() - current.clock
        epochs = f"{current.done} epoch{'s' if current.done != 1 else ''}, " if current.epochs else ""
        self.write(f"{self.title}: {current.label}: {epochs}{seconds:.1f} s")

    def _describe(self) -> None:
        if self._bar is not None:
            label = self._stages[-1].label if self._stages else ""
            self._bar.set_description(f"{self.title}: {label}" if label else self.title, refresh=True)

    def write(self, text: str) -> None:
        """Print ``text`` on its own line (above the bar, where there is one)."""
        if self._bar is not None:
            self._bar.write(text, file=self.stream)
        else:
            print(text, file=self.stream, flush=True)

    def close(self) -> None:
        """The fit has ended: close the bar, or print the total time."""
        seconds = time.perf_counter() - self._started
        if self._bar is not None:
            self._bar.set_description(f"{self.title}: done", refresh=False)
            self._bar.close()
        else:
            self.write(f"{self.title}: done in {seconds:.1f} s")


@contextlib.contextmanager
def fit_progress(
    verbose: int, title: str, planned_epochs: int, planned_stages: int, stream: Any = None
) -> Iterator[FitProgress | None]:
    """The progress of the fit run inside the block (``None`` with ``verbose=0``, and inside another
    fit's progress, whose display it joins): a bar with ``verbose=1`` where one can be drawn, lines
    otherwise (:class:`FitProgress`)."""
    if int(verbose) < 1 or _CURRENT.get() is not None:
        yield _CURRENT.get() if int(verbose) >= 1 else None
        return
    # (beside skorch's epoch tables, on standard output, from verbose=2)
    out = (sys.stderr if int(verbose) < 2 else sys.stdout) if stream is None else stream
    bar = int(verbose) == 1 and (ProgressBar().in_ipynb() or is_terminal(out))
    progress = FitProgress(title, planned_epochs, planned_stages, bar, out)
    token = _CURRENT.set(progress)
    try:
        yield progress
    finally:
        _CURRENT.reset(token)
        progress.close()


@contextlib.contextmanager
def stage(label: str, epochs: int = 0) -> Iterator[None]:
    """Mark the block as the stage ``label`` of the fit in progress (training at most ``epochs``
    epochs); nothing where no fit shows progress."""
    progress = _CURRENT.get()
    if progress is None:
        yield
        return
    progress.begin(label, epochs)
    try:
        yield
    finally:
        progress.end()


def note(text: str) -> None:
    """Print ``text`` as a line of the fit in progress, after its title (nothing where no fit shows
    progress)."""
    progress = _CURRENT.get()
    if progress is not None:
        progress.write(f"{progress.title}: {text}")


class EpochProgress(Callback):
    """A skorch callback that counts every epoch into the fit in progress (:func:`fit_progress`).

    It holds nothing of its own, so a net that carries it pickles and clones as any other.
    """

    def on_epoch_end(self, net: Any, **kwargs: Any) -> None:
        progress = _CURRENT.get()
        if progress is not None:
            progress.epoch()
