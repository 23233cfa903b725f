"""What every engine's streams share: their network, their device and the lock that serialises them.

Forking a process while a thread updates streams would copy them half-updated, with their lock held
by a thread the child does not have. Before ``os.fork`` every live engine's lock is taken (an update
in progress ends first) and it is released on both sides after, so a forked child starts from whole
streams and free locks. The child computes with one torch thread: OpenMP's threads do not survive a
fork, and a parallel region there can hang.
"""

from __future__ import annotations

import os
import sys
import threading
import weakref
from typing import Any

import torch
from torch import nn

__all__ = ["Streams"]

_LIVE: weakref.WeakSet[Streams] = weakref.WeakSet()
_HELD: list[Streams] = []


class Streams:
    """Base of the engines' stream holders.

    Parameters
    ----------
    module : torch.nn.Module
        The trained network (put in eval mode; its weights are not changed).
    device : torch.device or str
        Where the states live and the network runs.

    Attributes
    ----------
    lock : threading.RLock
        Held by every call that reads or changes the streams; hold it to make several calls one.
        A copy (pickle, ``copy.deepcopy``) gets a lock of its own.
    """

    def __init__(self, module: nn.Module, device: torch.device | str) -> None:
        self.module = module.eval()
        self.device = torch.device(device)
        self.lock = threading.RLock()
        _LIVE.add(self)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.lock = threading.RLock()
        _LIVE.add(self)


def _before_fork() -> None:
    _HELD[:] = list(_LIVE)
    for streams in _HELD:
        streams.lock.acquire()


def _after_fork_in_parent() -> None:
    for streams in reversed(_HELD):
        streams.lock.release()
    _HELD.clear()


def _after_fork_in_child() -> None:
    for streams in _HELD:
        streams.lock = threading.RLock()
    _HELD.clear()
    if "torch" in sys.modules:
        torch.set_num_threads(1)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child
    )
