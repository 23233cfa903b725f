"""A process forked while another thread updates a forecaster's streams gets them whole and usable."""

from __future__ import annotations

import multiprocessing
import os
import threading
import time

import numpy as np
import pandas as pd
import pytest

from aaren_ts import AarenForecaster
from tests._params import TINY_FORECASTER

pytestmark = pytest.mark.skipif(not hasattr(os, "register_at_fork"), reason="needs os.fork")


def _child(forecaster: AarenForecaster, queue) -> None:
    forecaster.partial_update_array(np.array([[[11.0]]]))
    queue.put((int(forecaster.engine_.n_seen[0]), forecaster.predict_array().tolist()))


def test_a_fork_during_an_update_gives_the_child_whole_streams_and_a_free_lock() -> None:
    y = pd.DataFrame({"y": 10 + np.sin(np.arange(60) / 3)})
    f = AarenForecaster(**{**TINY_FORECASTER, "num_threads": 2}).fit(y)
    f.predict_array()  # multi-threaded inference in the parent first
    seen_before = int(f.engine_.n_seen[0])
    holding = threading.Event()

    def slow_update() -> None:  # holds the lock across two updates, as a long update would
        with f.engine_.lock:
            holding.set()
            f.partial_update_array(np.array([[[10.0]]]))
            time.sleep(0.5)
            f.partial_update_array(np.array([[[10.5]]]))

    writer = threading.Thread(target=slow_update)
    writer.start()
    holding.wait()
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child, args=(f, queue))
    child.start()  # waits for the writer's lock: the child sees both updates or neither
    writer.join()
    child.join(timeout=60)
    assert child.exitcode == 0, "the child hung or failed"
    n_seen, forecast = queue.get(timeout=5)
    assert n_seen == seen_before + 3  # both of the writer's updates, then its own
    assert np.isfinite(forecast).all()
