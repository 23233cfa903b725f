"""All or nothing: a log of how to put back what a call changes, replayed when the call fails.

A mutating call records, before each change, how to undo it (:meth:`UndoLog.add`,
:meth:`UndoLog.keep`), inside :func:`all_or_nothing`. If anything raises before the call ends, an
interrupt (``KeyboardInterrupt``) included, the log is replayed in reverse, with further interrupts
held back until it is done, and the exception propagates: the streams are as they were, bit for bit.
Calls nest: an inner call given the outer log records into it, and the outer call decides.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["UndoLog", "all_or_nothing"]


class UndoLog:
    """How to put back, in reverse order, what a call has changed so far."""

    def __init__(self) -> None:
        self._actions: list[Callable[[], None]] = []

    def add(self, action: Callable[[], None]) -> None:
        """Record ``action``, which undoes the change about to be made."""
        self._actions.append(action)

    def keep(self, owner: Any, *names: str) -> None:
        """Record the current values of ``owner``'s attributes ``names`` (which the call is about to
        replace with new objects, not change in place)."""
        values = [(name, getattr(owner, name)) for name in names]

        def put_back() -> None:
            for name, value in values:
                setattr(owner, name, value)

        self._actions.append(put_back)

    def rollback(self) -> None:
        """Undo every recorded change, newest first, with interrupts held back until done."""
        with _interrupts_held():
            while self._actions:
                self._actions.pop()()


@contextlib.contextmanager
def _interrupts_held() -> Iterator[None]:
    """Block SIGINT for the block where it can be (the main thread, on POSIX): one that arrives is
    delivered after it."""
    can_block = hasattr(signal, "pthread_sigmask") and threading.current_thread() is threading.main_thread()
    if not can_block:
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


@contextlib.contextmanager
def all_or_nothing(enclosing: UndoLog | None = None) -> Iterator[UndoLog]:
    """A log for the block's changes, replayed if the block raises (any exception, interrupts
    included); with an ``enclosing`` log, the block records into it and its owner decides."""
    if enclosing is not None:
        yield enclosing
        return
    log = UndoLog()
    try:
        yield log
    except BaseException:
        log.rollback()
        raise
