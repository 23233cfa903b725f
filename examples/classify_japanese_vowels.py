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
# # Classifying series, and classifying them while they are recorded
#
# Part 1 trains `AarenClassifier` on JapaneseVowels (12 channels, 7 to 29 time points per series;
# ships with sktime). Part 2 classifies gestures *while they are being recorded*: the test series
# arrive in chunks, `partial_update` advances each stream's recurrent state by the new chunk only,
# and the classifier gives its current answer after every chunk. The plot shows accuracy against
# the fraction of each gesture seen.
#
# Part 2 uses UWaveGestureLibrary (3-axis accelerometer, 8 gestures, 315 steps) from the data
# folder named by `AAREN_TS_DATA`; when it is not there it falls back to BasicMotions (ships with
# sktime). Set `AAREN_TS_EXAMPLES_QUICK=1` for a reduced run.

# %%
import itertools
import time

import matplotlib.pyplot as plt
import numpy as np
import torch
from _common import QUICK, save

from aaren_ts import AarenClassifier
from aaren_ts.datasets import DatasetNotFoundError, load_uea

# These models are small: one thread is as fast, and timings stay meaningful on a busy machine.
torch.set_num_threads(1)
print("reduced setting" if QUICK else "full setting")

# %% [markdown]
# ## 1. JapaneseVowels
#
# The series have unequal lengths, so the loader returns an sktime nested DataFrame; the
# classifier pads and masks internally. Early stopping uses 20 % of the *training* series.

# %%
X_train, y_train = load_uea("JapaneseVowels", split="train")
X_test, y_test = load_uea("JapaneseVowels", split="test")
if QUICK:  # every third series of each split
    X_train, y_train = X_train.iloc[::3], y_train[::3]
    X_test, y_test = X_test.iloc[::3], y_test[::3]
print(f"{len(y_train)} training and {len(y_test)} test series, classes {sorted(set(y_train))}")

clf = AarenClassifier(max_epochs=3 if QUICK else 150, random_state=0, num_threads=1)
start = time.perf_counter()
clf.fit(X_train, y_train)
print(f"fitted in {time.perf_counter() - start:.1f} s; test accuracy {clf.score(X_test, y_test):.3f}")

# %% [markdown]
# ## 2. Classifying gestures while they are recorded
#
# Load UWaveGestureLibrary from the data folder if it is there (no download attempt), otherwise
# BasicMotions.

# %%
try:
    name = "UWaveGestureLibrary"
    G_train, g_train = load_uea(name, split="train", download_if_missing=False)
    G_test, g_test = load_uea(name, split="test", download_if_missing=False)
except DatasetNotFoundError as err:
    print(f"UWaveGestureLibrary not found ({str(err).splitlines()[0]}); using BasicMotions")
    name = "BasicMotions"
    G_train, g_train = load_uea(name, split="train")
    G_test, g_test = load_uea(name, split="test")
if QUICK:  # a subset of each split
    rng = np.random.default_rng(0)
    G_train, g_train = G_train[(i := rng.permutation(len(g_train))[:80])], g_train[i]
    G_test, g_test = G_test[(i := rng.permutation(len(g_test))[:80])], g_test[i]
print(f"{name}: train {G_train.shape}, test {G_test.shape}")

gesture_clf = AarenClassifier(max_epochs=3 if QUICK else 150, random_state=0, num_threads=1)
gesture_clf.fit(G_train, g_train)
print(f"accuracy on whole test series: {gesture_clf.score(G_test, g_test):.3f}")

# %% [markdown]
# Now the test gestures arrive in 20 chunks. After each chunk every stream's state has moved on by
# the chunk alone (with the Aaren backbone the state's size does not grow with the history), and
# `predict()` without arguments returns the current decision of every stream.

# %%
length = G_test.shape[-1]
edges = np.linspace(0, length, 21).round().astype(int)
gesture_clf.reset_stream()
fractions, stream_accuracy = [], []
for lo, hi in itertools.pairwise(edges):
    gesture_clf.partial_update(G_test[:, :, lo:hi])
    fractions.append(hi / length)
    stream_accuracy.append(np.mean(gesture_clf.predict() == g_test))
    print(f"{hi:4d}/{length} steps seen: accuracy {stream_accuracy[-1]:.3f}")

# The same curve from one pass over the whole series: staged_predict_proba yields the probabilities
# after every step. At the chunk edges it must agree with the stream.
staged = list(gesture_clf.staged_predict_proba(G_test))
staged_accuracy = [np.mean(gesture_clf.classes_[p.argmax(1)] == g_test) for p in staged]
assert np.allclose([staged_accuracy[h - 1] for h in edges[1:]], stream_accuracy)

# %%
fig, ax = plt.subplots(figsize=(6.5, 4))
steps = np.arange(1, length + 1) / length
ax.plot(steps, staged_accuracy, color="0.6", lw=1, label="after every step (staged_predict_proba)")
ax.plot(fractions, stream_accuracy, "o-", color="tab:blue", label="streamed in 20 chunks (partial_update)")
ax.axhline(1 / len(gesture_clf.classes_), color="0.3", ls=":", lw=1, label="chance")
ax.set_xlabel("fraction of the gesture seen")
ax.set_ylabel("test accuracy")
ax.set_ylim(0, 1.02)
ax.set_title(f"{name}: classifying while the series is recorded")
ax.legend(loc="lower right", fontsize=8)
save(fig, "classify_streaming_accuracy")
