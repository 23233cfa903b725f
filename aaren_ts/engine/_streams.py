"""What every engine's streams share: their network, their device and the lock that serialises them."""

from __future__ import annotations

import threading
from typing import Any

import torch
from torch import nn

__all__ = ["Streams"]


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

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.lock = threading.RLock()
