# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# ruff: noqa: E402 (imports stay in the notebook cells that use them)

# %% [markdown]
# # Forecasting ETTh1, then streaming the test period
#
# 1. Fit `AarenForecaster` on the training part of ETTh1 (hourly, 7 channels; the protocol's
#    borders from `aaren_ts.datasets`), stream the validation part into its state with one
#    `partial_update` call, and plot the forecast of the next 96 hours against the truth.
# 2. Stream the test period one observation at a time with `partial_update` and record the cost of
#    each step, for the Aaren backbone and for the KV-cached Transformer backbone. Aaren's per-step
#    cost stays flat; the Transformer's grows with the history it attends over.
# 3. The same comparison at the level of the encoders (`aaren_ts.nn`), without the estimator's
#    per-call overhead.
#
# ETTh1 is read from the data folder named by `AAREN_TS_DATA` (no download is attempted); when it
# is not there the example uses the airline series that ships with sktime. Set
# `AAREN_TS_EXAMPLES_QUICK=1` for a reduced run.

# %%
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
from _common import QUICK, save

from aaren_ts import AarenForecaster
from aaren_ts.datasets import DatasetNotFoundError, get_split, load_ett

# These models are small: one thread is as fast, and timings stay meaningful on a busy machine.
torch.set_num_threads(1)
print("reduced setting" if QUICK else "full setting")

# %% [markdown]
# ## Data
#
# The protocol's parts: train `[0, 8640)`, validation `[8640, 11520)`, test `[11520, 14400)`. The
# forecaster standardises each channel with statistics of its own training data, so the raw values
# are passed in.

# %%
try:
    data = load_ett("ETTh1", download_if_missing=False)
    name, context, horizon = "ETTh1", 96, 96
    train = get_split(data, "ETTh1", "train")
    val = get_split(data, "ETTh1", "val", input_length=0)
    test = get_split(data, "ETTh1", "test", input_length=0)
    if QUICK:  # a shorter history and a shorter stream
        train, val, test = train.iloc[-1500:], val.iloc[:0], val.iloc[:60]
except DatasetNotFoundError as err:
    print(f"ETTh1 not found ({str(err).splitlines()[0][:120]}...); using sktime's airline data")
    from sktime.datasets import load_airline

    data = load_airline().to_frame()
    name, context, horizon = "airline", 24, 12
    train, val, test = data.iloc[:96], data.iloc[:0], data.iloc[96:]
target = data.columns[-1]  # ETTh1's target is OT, the last column
print(f"{name}: train {train.shape}, validation {val.shape}, test {test.shape}")

# %% [markdown]
# ## 1. Fit and forecast

# %%
epochs = 2 if QUICK else 20
aaren = AarenForecaster(context_length=context, horizon=horizon, max_epochs=epochs, random_state=0)
start = time.perf_counter()
aaren.fit(train)
print(f"fitted in {time.perf_counter() - start:.1f} s ({len(aaren.net_.history)} epochs)")
if len(val):
    start = time.perf_counter()
    aaren.partial_update(val)  # the whole validation part in one call (block form)
    print(f"streamed {len(val)} validation steps in one call: {time.perf_counter() - start:.2f} s")

forecast = aaren.predict(fh=np.arange(1, horizon + 1))
truth = test.iloc[:horizon]  # (shorter than the horizon in the reduced setting)
error = (forecast.iloc[: len(truth)].to_numpy() - truth.to_numpy()) / aaren.scale_
print(f"MSE of this one forecast over {len(truth)} steps, standardised scale: {np.mean(error**2):.3f}")


def as_time(index):
    """Timestamps for matplotlib (sktime's airline data has a PeriodIndex)."""
    return index.to_timestamp() if isinstance(index, pd.PeriodIndex) else index


fig, ax = plt.subplots(figsize=(8, 3.6))
history = pd.concat([train, val]).iloc[-2 * horizon :]
ax.plot(as_time(history.index), history[target], color="0.4", lw=1, label="history")
ax.plot(as_time(truth.index), truth[target], color="black", lw=1.2, label="truth")
ax.plot(as_time(forecast.index), forecast[target], color="tab:blue", lw=1.6, label="AarenForecaster")
ax.set_title(f"{name}: {horizon}-step forecast of {target} from the start of the test period")
ax.legend(fontsize=8)
fig.autofmt_xdate()
save(fig, "forecast_vs_truth")

# %% [markdown]
# ## 2. Streaming the test period: cost per observation
#
# A second forecaster with the Transformer backbone (trained briefly: only its cost matters here)
# streams the same observations. Both receive one observation per `partial_update` call.

# %%
transformer = AarenForecaster(
    context_length=context, horizon=horizon, backbone="transformer", max_epochs=1, random_state=0
)
transformer.fit(train)
if len(val):
    transformer.partial_update(val)


def stream_costs(forecaster, observations):
    """Seconds of each one-observation ``partial_update`` call, and the one-step-ahead errors."""
    costs, errors = [], []
    for t in range(len(observations)):
        row = observations.iloc[t : t + 1]
        errors.append(float(forecaster.predict(fh=[1]).iloc[0][target] - row.iloc[0][target]))
        start = time.perf_counter()
        forecaster.partial_update(row)
        costs.append(time.perf_counter() - start)
    return np.array(costs), np.array(errors)


with torch.inference_mode():
    aaren_costs, aaren_errors = stream_costs(aaren, test)
    transformer_costs, _ = stream_costs(transformer, test)
mean_error = np.abs(aaren_errors).mean()
print(f"Aaren: {aaren.n_seen_} observations consumed; mean one-step-ahead |error| {mean_error:.3f}")
for label, costs in (("Aaren", aaren_costs), ("Transformer", transformer_costs)):
    k = max(1, len(costs) // 10)
    print(
        f"{label:12s} ms per observation: first tenth {1e3 * np.median(costs[:k]):.2f}, "
        f"last tenth {1e3 * np.median(costs[-k:]):.2f}"
    )

# %% [markdown]
# ## 3. The encoders alone
#
# The estimator's per-call work (pandas checks, index arithmetic) is a fixed cost that can hide how
# the attention itself scales. Here the encoders of the forecaster's size step through a long
# history directly: `AarenEncoder.step` against `CausalTransformerEncoder.step` with its KV cache,
# batch 7 (one row per channel, as the channel-independent forecaster runs).

# %%
from aaren_ts.nn import AarenEncoder, CausalTransformerEncoder

n_tokens = 600 if QUICK else 8192
sizes = dict(d_model=64, n_heads=4, n_layers=2, d_ff=128)
tokens = torch.randn(n_tokens, 7, sizes["d_model"])
encoder_costs = {}
for label, cls in (("AarenEncoder", AarenEncoder), ("CausalTransformerEncoder", CausalTransformerEncoder)):
    encoder = cls(**sizes).eval()
    state = encoder.init_state(7)
    costs = np.empty(n_tokens)
    with torch.inference_mode():
        for _ in range(5):  # warm-up on a throwaway state (first calls build caches)
            encoder.step(tokens[0], encoder.init_state(7))
        for i in range(n_tokens):
            start = time.perf_counter()
            _, state = encoder.step(tokens[i], state)
            costs[i] = time.perf_counter() - start
    encoder_costs[label] = costs
    k = n_tokens // 10
    print(
        f"{label:25s} µs per token: first tenth {1e6 * np.median(costs[:k]):.0f}, "
        f"last tenth {1e6 * np.median(costs[-k:]):.0f}"
    )


# %%
def smooth(x, width):
    """Running median, to show the trend through timer noise."""
    width = max(1, min(width, len(x)))
    return np.array([np.median(x[max(0, i - width + 1) : i + 1]) for i in range(len(x))])


fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 3.8))
steps = np.arange(1, len(test) + 1)
ax1.plot(steps, 1e3 * smooth(aaren_costs, 9), label="AarenForecaster (Aaren)", color="tab:blue")
ax1.plot(steps, 1e3 * smooth(transformer_costs, 9), label="AarenForecaster (Transformer)", color="tab:red")
ax1.set_xlabel("observations streamed into the test period")
ax1.set_ylabel("ms per partial_update (running median)")
ax1.set_ylim(bottom=0)
ax1.set_title("estimator: one observation per call", fontsize=10)
ax1.legend(fontsize=8)
history = np.arange(1, n_tokens + 1)
ax2.plot(
    history, 1e6 * smooth(encoder_costs["AarenEncoder"], 50), label="AarenEncoder.step", color="tab:blue"
)
ax2.plot(
    history,
    1e6 * smooth(encoder_costs["CausalTransformerEncoder"], 50),
    label="CausalTransformerEncoder.step (KV cache)",
    color="tab:red",
)
ax2.set_xlabel("history length (tokens)")
ax2.set_ylabel("µs per token (running median)")
ax2.set_ylim(bottom=0)
ax2.set_title("encoders alone, batch 7", fontsize=10)
ax2.legend(fontsize=8)
fig.tight_layout()
save(fig, "streaming_cost")
