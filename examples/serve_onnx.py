# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Serving a forecaster without PyTorch: ONNX export and `OnnxStreamer`
#
# 1. Fit `AarenForecaster` on the airline series (it ships with sktime) and export its streaming
#    step with `to_onnx`: one observation in, the next 12 months' forecast and the new state out.
# 2. Stream the last 24 months through the exported file with `aaren_ts.onnx.OnnxStreamer`
#    (numpy and ONNX Runtime only), and through the estimator itself: the forecasts agree.
# 3. Time one step of each, and plot the streamed forecasts with their 90 % intervals.
#
# Needs the `onnx` extra (`pip install "aaren_ts[onnx]"`). Set `AAREN_TS_EXAMPLES_QUICK=1` for a
# reduced run.

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
import torch
from _common import QUICK, output_dir, save
from sktime.datasets import load_airline

from aaren_ts import AarenForecaster
from aaren_ts.onnx import OnnxStreamer

torch.set_num_threads(1)
print("reduced setting" if QUICK else "full setting")

# %% [markdown]
# ## Fit on all but the last 24 months, then export

# %%
y = load_airline()
train, stream = y.iloc[:-24], y.iloc[-24:]
forecaster = AarenForecaster(horizon=12, sp=12, max_epochs=20 if QUICK else 200, random_state=0)
forecaster.fit(train)
path = forecaster.to_onnx(output_dir() / "airline.onnx")
print(f"exported {path} ({path.stat().st_size / 1024:.0f} KiB)")

# %% [markdown]
# ## Stream the 24 months through both, one observation at a time
#
# The streamer holds the state the file was exported with (the forecaster's stream after `fit`) and
# takes observations as `(time, channels)` arrays.

# %%
streamer = OnnxStreamer(path)
onnx_forecasts, torch_forecasts, bands = [], [], []
for value in stream.to_numpy():
    streamer.partial_update(np.array([[value]]))
    forecaster.partial_update_array(np.array([[value]]))
    onnx_forecasts.append(streamer.predict()[:, 0])
    torch_forecasts.append(forecaster.predict_array()[0, :, 0])
    bands.append(streamer.predict_interval(0.9))
gap = np.abs(np.array(onnx_forecasts) - np.array(torch_forecasts)).max()
print(f"largest difference between the streamer's and the estimator's forecasts: {gap:.2e} passengers")

# %% [markdown]
# ## One step: the estimator against the streamer

# %%
new = np.array([[float(stream.iloc[-1])]])


def per_call(fn, repeats: int = 200 if not QUICK else 30) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats * 1e3


t_torch = per_call(lambda: (forecaster.partial_update_array(new), forecaster.predict_array()))
t_onnx = per_call(lambda: (streamer.partial_update(new), streamer.predict()))
print(f"one observation + forecast: estimator {t_torch:.3f} ms, OnnxStreamer {t_onnx:.3f} ms")

# %% [markdown]
# ## Plot: the streamed forecasts made 6 and 12 months into the stream

# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 3.8), gridspec_kw={"width_ratios": [3, 1]})
ax = axes[0]
ax.plot(y.index.to_timestamp(), y.to_numpy(), color="0.3", lw=1, label="airline passengers")
for k, colour in ((5, "C0"), (11, "C1")):
    start = stream.index[k] + 1
    months = [(start + h).to_timestamp() for h in range(12)]
    lower, upper = bands[k]
    ax.plot(months, onnx_forecasts[k], color=colour, label=f"OnnxStreamer forecast after {stream.index[k]}")
    ax.plot(months, torch_forecasts[k], color=colour, ls=":", lw=2, label="estimator's (the same)")
    ax.fill_between(months, lower[:, 0], upper[:, 0], color=colour, alpha=0.2)
ax.set_xlim(y.index[-60].to_timestamp(), (stream.index[-1] + 12).to_timestamp())
ax.legend(fontsize=8, loc="upper left")
ax.set_title("Forecasts streamed through the exported ONNX step (90 % intervals)")
axes[1].bar(["estimator", "OnnxStreamer"], [t_torch, t_onnx], color=["C0", "C1"])
axes[1].set_ylabel("ms per observation + forecast")
axes[1].set_title("one step, one thread")
save(fig, "serve_onnx")
