"""Load saved forecasters and streamer states, continue their streams, and report each outcome as JSON.

``tests/engine/test_fuzz_restore.py`` runs this module in a subprocess (``python -m
tests.engine._restore_worker``) and sends it mutated files, so that a crash while loading or stepping
(a segmentation fault in a C kernel, an abort) fails that test instead of killing pytest.

Protocol, one JSON object per line: the first line read is ``{"steps": [...], "onnx": path}`` (the
observations every loaded model continues with, ``(n_series, n_steps, n_channels)``, and the exported
file whose streamer takes the states); then each request ``{"kind": "archive" | "state", "path": p}``
is answered with ``{"outcome": "refused" | "failed later" | "ok", ...}``: the exception's type and
message if loading (``refused``) or continuing (``failed later``) raised, else the forecasts and their
quantiles at ``QUANTILES`` after the steps.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np

QUANTILES = [0.1, 0.5, 0.9]


def _error(outcome: str, err: BaseException) -> dict[str, Any]:
    return {"outcome": outcome, "type": type(err).__name__, "message": str(err)}


def _archive(path: str, steps: np.ndarray) -> dict[str, Any]:
    from aaren_ts import AarenForecaster

    try:
        forecaster = AarenForecaster.load(path)
    except Exception as err:  # reported: the test decides which exceptions are acceptable
        return _error("refused", err)
    try:
        forecaster.partial_update_array(steps)
        point = forecaster.predict_array()
        quantiles = forecaster.predict_quantiles_array(QUANTILES)
    except Exception as err:
        return _error("failed later", err)
    return {"outcome": "ok", "predict": point.tolist(), "quantiles": quantiles.tolist()}


def _state(streamer: Any, path: str, steps: np.ndarray) -> dict[str, Any]:
    streamer.reset()
    try:
        streamer.load_state(path)
    except Exception as err:
        return _error("refused", err)
    try:
        streamer.partial_update(steps)
        point = streamer.predict()
        quantiles = streamer.predict_quantiles(QUANTILES)
    except Exception as err:
        return _error("failed later", err)
    return {"outcome": "ok", "predict": point.tolist(), "quantiles": quantiles.tolist()}


def main() -> None:
    from aaren_ts.onnx import OnnxStreamer

    setup = json.loads(sys.stdin.readline())
    steps = np.asarray(setup["steps"], dtype=np.float64)
    streamer = OnnxStreamer(setup["onnx"])
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if request["kind"] == "archive":
            answer = _archive(request["path"], steps)
        else:
            answer = _state(streamer, request["path"], steps)
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
