"""Classification benchmark: AarenClassifier against aeon's MiniRocket, MultiRocket and MultiRocket-Hydra.

One run, on every UEA problem of the dataset registry that is in the data folder (the paper's ten and
BasicMotions; the others are listed with the paper's figure and marked as not run):

* ``AarenClassifier()`` with its default parameters (``--param name=value`` changes one), seeds
  ``--seeds`` (default 0 1 2), in this process with one torch thread;
* aeon's ``MiniRocketClassifier``, ``MultiRocketClassifier`` and ``MultiRocketHydraClassifier`` with
  their defaults and the same seeds, in a subprocess started with aeon's Python (``--aeon-python`` or
  ``$AAREN_TS_AEON_PYTHON``), one thread each (``n_jobs=1``; OMP, MKL, OpenBLAS and numba threads 1);
* test accuracy (mean ± sd over seeds), fit and predict CPU seconds and wall seconds;
* accuracy against the fraction of each test series seen (10, 25, 50, 75, 100 %): AarenClassifier
  fitted once on whole series and *streamed* through each test series (``partial_update``, then
  ``predict_proba()`` when 10 %, 25 %, ... of the series has arrived), against MiniRocket trained and
  tested on the same prefixes (one model per fraction: what a non-streaming classifier must do);
* the cost of one streaming step at short and long history (``--skip-streaming`` leaves it out).

Every seed is scored on the archive's TRAIN/TEST split, or, with ``--resample``, seed ``s`` on the
split's resample ``s`` (TRAIN and TEST pooled and redrawn with TRAIN's class counts; resample 0 is
the archive's split), as the UEA bake-offs report accuracy over resamples: one test split of a few
hundred series ranks classifiers a point apart by chance. With two seeds or more the report pairs
each peer with AarenClassifier seed by seed (the mean difference, its standard error, wins and
losses).

aeon 1.x needs an older numpy than this project's environment, so it gets its own virtual
environment (MultiRocket-Hydra also needs PyTorch there; the CPU build is enough)::

    python3 -m venv .venv-aeon
    .venv-aeon/bin/pip install -r benchmarks/requirements-aeon.txt

Then::

    python benchmarks/classification.py --aeon-python .venv-aeon/bin/python --data-home $AAREN_TS_DATA
    python benchmarks/classification.py --quick --aeon-python .venv-aeon/bin/python   # a smoke run
    python benchmarks/classification.py --datasets JapaneseVowels --seeds 0 --skip-peers

Without an aeon Python the peers are skipped, and the report says so. Peers see series zero-padded
to the longest length of the dataset (and to at least 9 points, MiniRocket's kernel length); Aaren
reads unequal lengths as they are. Writes ``benchmarks/results/classification.md`` (tables),
``classification.png`` (accuracy, streaming cost) and ``classification_curve.png`` (accuracy vs
fraction seen); ``--output NAME`` changes the base name.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
from _aeon_peers import PEERS, prefix_lengths
from _common import paired_differences, parse_param, resample_split

from aaren_ts.datasets import list_datasets
from aaren_ts.datasets.reference import PAPER_ACCURACY
from aaren_ts.nn.ensemble import member_networks

RESULTS = Path(__file__).resolve().parent / "results"
WORKER = Path(__file__).resolve().parent / "_aeon_peers.py"
AEON_PYTHON_ENV = "AAREN_TS_AEON_PYTHON"
FRACTIONS = (0.1, 0.25, 0.5, 0.75, 1.0)
AAREN = "AarenClassifier"
#: environment of the aeon subprocess: one thread for every library that could start more
ONE_THREAD = {
    name: "1" for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS")
}


def _load(name: str, data_home: str | None) -> tuple[list, np.ndarray, list, np.ndarray]:
    from aaren_ts.datasets import load_uea

    kw = {"data_home": data_home, "download_if_missing": False, "return_type": "list"}
    X_train, y_train = load_uea(name, "train", **kw)
    X_test, y_test = load_uea(name, "test", **kw)
    return X_train, y_train, X_test, y_test


def split_for(data: tuple, seed: int, resample: bool) -> tuple:
    """The split seed ``seed`` is scored on: ``data`` (the archive's), or with ``resample`` its
    resample ``seed`` (:func:`_common.resample_split`)."""
    return resample_split(*data, seed) if resample else data


def _timed(call: Callable[[], Any]) -> tuple[Any, float, float]:
    """The call's result, its CPU seconds (this process, all threads) and its wall seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = call()
    return result, time.process_time() - cpu, time.perf_counter() - wall


def stream_curve(clf: Any, X_test: list[np.ndarray], y_test: np.ndarray, fractions: tuple) -> list[float]:
    """Accuracy (%) of the streamed probabilities after each fraction of every test series has arrived."""
    lengths = np.array([x.shape[1] for x in X_test])
    done = np.zeros(len(X_test), dtype=int)
    clf.reset_stream()
    accuracies = []
    for fraction in fractions:
        upto = prefix_lengths(lengths, fraction)
        clf.partial_update([x[:, a:b] for x, a, b in zip(X_test, done, upto, strict=True)])
        done = upto
        proba = clf.predict_proba()
        accuracies.append(100.0 * float(np.mean(clf.classes_[np.argmax(proba, axis=1)] == y_test)))
    clf.reset_stream()
    return accuracies


@contextlib.contextmanager
def _mixture_restored(clf: Any) -> Iterator[list[tuple[Any, torch.Tensor, torch.Tensor]]]:
    """Every member network of ``clf`` with copies of its mixture's factors and weights, which are
    restored when the context ends."""
    members = member_networks(clf.net_.module_)
    saved = [(m, m.head_gain.clone(), m.head_weight.clone()) for m in members]
    try:
        yield saved
    finally:
        for member, gain, weight in saved:
            member.set_head_gains(gain, weight)


def _accuracy(clf: Any, X_test: list[np.ndarray], y_test: np.ndarray) -> float:
    return 100.0 * float(np.mean(np.asarray(clf.predict(X_test)) == y_test))


@contextlib.contextmanager
def _one_part(clf: Any, network_weight: float) -> Iterator[None]:
    """``clf`` answering with one part of its mixture: every member's network weight set to
    ``network_weight`` (0: the random kernels alone; 1: the network alone, its scores untempered) at
    every prefix length, restored when the context ends."""
    with _mixture_restored(clf) as saved:
        for member, gain, weight in saved:
            factor = gain if network_weight == 0.0 else torch.ones_like(gain)
            member.set_head_gains(factor, torch.full_like(weight, network_weight))
        yield


def mixture_parts(clf: Any, X_test: list[np.ndarray], y_test: np.ndarray) -> tuple[float, float] | None:
    """Test accuracy % of the fitted classifier's random kernels alone and of its network alone: the
    network's weight in the mixture set to 0, then to 1 (its scores untempered), at every prefix
    length, and restored after (in every member of an ensemble: its kernels alone are the mean of
    the members' kernels); ``None`` without kernels. A diagnostic of the parts, not a setting anyone
    chose: the mixture's weights are chosen on held-out training series."""
    if getattr(clf, "random_kernels_", None) is None:
        return None
    scores = []
    for network_weight in (0.0, 1.0):
        with _one_part(clf, network_weight):
            scores.append(_accuracy(clf, X_test, y_test))
    return scores[0], scores[1]


def streamed_parts(
    clf: Any, X_test: list[np.ndarray], y_test: np.ndarray, fractions: tuple
) -> tuple[list[float], list[float]] | None:
    """As :func:`mixture_parts`, streamed: the accuracy % of the kernels alone and of the network alone
    after each of ``fractions`` of every series (:func:`stream_curve`); ``None`` without kernels."""
    if getattr(clf, "random_kernels_", None) is None:
        return None
    curves = []
    for network_weight in (0.0, 1.0):
        with _one_part(clf, network_weight):
            curves.append(stream_curve(clf, X_test, y_test, fractions))
    return curves[0], curves[1]


def whole_series_floors(
    clf: Any, X_test: list[np.ndarray], y_test: np.ndarray, floors: Sequence[float]
) -> list[float]:
    """Accuracy % of ``clf``, fitted with no floor on the network's weight after the whole series
    (``WHOLE_SERIES_MIN_WEIGHT`` 0, see :func:`no_whole_series_floor`), had it been fitted with each of
    ``floors``: every member's weights raised to the floor as ``fit`` raises them
    (:func:`~aaren_ts.estimators.classification._kernels.raise_to_floor`), and restored after."""
    from aaren_ts.estimators.classification._kernels import raise_to_floor

    scores = []
    with _mixture_restored(clf) as saved:
        for floor in floors:
            for member, gain, weight in saved:
                gain, weight = gain.clone(), weight.clone()
                raise_to_floor(gain, weight, floor)
                member.set_head_gains(gain, weight)
            scores.append(_accuracy(clf, X_test, y_test))
    return scores


def no_whole_series_floor() -> Any:
    """A context in which classifiers fit their mixtures without the floor on the network's weight
    after the whole series, for :func:`whole_series_floors`."""
    from unittest import mock

    from aaren_ts.estimators.classification import _kernels

    return mock.patch.object(_kernels, "WHOLE_SERIES_MIN_WEIGHT", 0.0)


def run_aaren(
    datasets: dict[str, tuple],
    seeds: list[int],
    params: dict[str, Any],
    fractions: tuple,
    transformer: bool,
    resample: bool = False,
) -> tuple[list, list, list[str], list]:
    """Fit and score AarenClassifier (and its Transformer twin, when asked) on every dataset and seed
    (on the split :func:`split_for` gives); ``parts``: per dataset and seed, the test accuracy of the
    classifier, its kernels and its network (:func:`mixture_parts`)."""
    from aaren_ts import AarenClassifier

    rows, curve, notes, parts = [], [], [], []
    variants = {AAREN: {}} | ({f"{AAREN}(transformer)": {"backbone": "transformer"}} if transformer else {})
    for name, data in datasets.items():
        for seed in seeds:
            X_train, y_train, X_test, y_test = split_for(data, seed, resample)
            for label, extra in variants.items():
                clf = AarenClassifier(random_state=seed, **{**params, **extra})
                try:
                    _, fit_cpu, fit_wall = _timed(partial(clf.fit, X_train, y_train))
                    pred, pred_cpu, pred_wall = _timed(partial(clf.predict, X_test))
                except Exception as err:
                    notes.append(f"{label} failed on {name} (seed {seed}): {type(err).__name__}: {err}")
                    traceback.print_exc()
                    continue
                acc = 100.0 * float(np.mean(np.asarray(pred) == y_test))
                rows.append([name, label, seed, acc, fit_cpu, fit_wall, pred_cpu, pred_wall])
                print(
                    f"{name:22s} {label:30s} seed={seed} acc={acc:6.2f}% fit={fit_cpu:6.1f} CPU s "
                    f"({fit_wall:6.1f} wall) predict={pred_cpu:5.2f} CPU s",
                    flush=True,
                )
                if label != AAREN:
                    continue
                streamed = stream_curve(clf, X_test, y_test, fractions)
                model = f"{AAREN} (streamed)"
                curve += [[name, model, seed, f, a] for f, a in zip(fractions, streamed, strict=True)]
                print(f"{name:22s} streamed accuracy at {fractions}: {np.round(streamed, 2).tolist()}")
                if fractions[-1] == 1.0 and abs(streamed[-1] - acc) > 1e-9:
                    notes.append(
                        f"{name} seed {seed}: the streamed accuracy on whole series ({streamed[-1]:.2f} %) "
                        f"differs from predict's ({acc:.2f} %)"
                    )
                split = mixture_parts(clf, X_test, y_test)
                if split is not None:
                    parts.append([name, seed, acc, *split])
                    print(f"{name:22s} kernels alone {split[0]:6.2f}%, network alone {split[1]:6.2f}%")
    return rows, curve, notes, parts


def _export_split(data: tuple, path: Path) -> None:
    """Write one split as an .npz the aeon worker reads: NaN-padded arrays, lengths, labels."""
    X_train, y_train, X_test, y_test = data
    arrays = {}
    for part, X, y in (("train", X_train, y_train), ("test", X_test, y_test)):
        lengths = np.array([x.shape[1] for x in X])
        values = np.full((len(X), X[0].shape[0], lengths.max()), np.nan)
        for i, x in enumerate(X):
            values[i, :, : x.shape[1]] = x
        arrays |= {f"X_{part}": values, f"len_{part}": lengths, f"y_{part}": np.asarray(y, dtype=str)}
    np.savez(path, **arrays)


def _export(
    datasets: dict[str, tuple], seeds: list[int], folder: Path, resample: bool = False
) -> list[dict[str, Any]]:
    """The aeon worker's entries: each dataset's split written once for all ``seeds``, or with
    ``resample`` each seed's resample written for that seed alone."""
    entries: list[dict[str, Any]] = []
    for name, data in datasets.items():
        for group in [[seed] for seed in seeds] if resample else [list(seeds)]:
            path = folder / (f"{name}_{group[0]}.npz" if resample else f"{name}.npz")
            _export_split(split_for(data, group[0], resample), path)
            entries.append({"name": name, "path": str(path), "seeds": group})
    return entries


def run_peers(
    datasets: dict[str, tuple],
    seeds: list[int],
    peers: list[str],
    fractions: tuple,
    aeon_python: str | None,
    resample: bool = False,
) -> tuple[list, list, list[str], str]:
    """Run aeon's classifiers in aeon's Python, on the splits :func:`split_for` gives; returns rows,
    curve rows, notes and aeon's version line."""
    if not peers:
        return [], [], [], ""
    if not aeon_python:
        return [], [], [f"aeon peers skipped: no aeon Python given (--aeon-python or ${AEON_PYTHON_ENV})"], ""
    with tempfile.TemporaryDirectory(prefix="aaren_ts_peers_") as tmp:
        folder = Path(tmp)
        entries = _export(datasets, seeds, folder, resample)
        task = {"datasets": entries, "seeds": seeds, "peers": peers, "fractions": fractions}
        (folder / "task.json").write_text(json.dumps(task))
        env = {**os.environ, **ONE_THREAD}
        command = [aeon_python, str(WORKER), str(folder / "task.json"), str(folder / "result.json")]
        done = subprocess.run(command, env=env, check=False)
        if done.returncode != 0 or not (folder / "result.json").is_file():
            return [], [], [f"aeon peers failed: {' '.join(command[:2])} exited with {done.returncode}"], ""
        result = json.loads((folder / "result.json").read_text())
    version = f"aeon {result['aeon']} (numpy {result['numpy']})"
    return result["rows"], result["curve"], result["notes"], version


def run_streaming(
    data_home: str | None, histories: tuple[int, ...] = (10, 10_000), repeats: int = 50
) -> list:
    """Seconds per new time step: partial_update vs predict_proba on the whole growing series."""
    from aaren_ts import AarenClassifier
    from aaren_ts.datasets import load_uea

    X_train, y_train = load_uea(
        "JapaneseVowels", "train", data_home=data_home, return_type="list", download_if_missing=False
    )
    rng = np.random.default_rng(0)
    long_series = rng.normal(size=(1, X_train[0].shape[0], max(histories) + repeats)).astype(np.float32)
    rows = []
    for backbone in ("aaren", "transformer"):
        clf = AarenClassifier(backbone=backbone, max_epochs=5, random_state=0).fit(X_train, y_train)
        for history in histories:
            clf.reset_stream()
            clf.partial_update(long_series[:, :, :history])
            start = time.perf_counter()
            for t in range(history, history + repeats):
                clf.partial_update(long_series[:, :, t : t + 1])
                clf.predict_proba()
            update_s = (time.perf_counter() - start) / repeats
            n_full = 5
            start = time.perf_counter()
            for t in range(history, history + n_full):
                clf.predict_proba(long_series[:, :, : t + 1])
            full_s = (time.perf_counter() - start) / n_full
            rows.append((backbone, history, update_s, full_s))
            print(
                f"streaming {backbone:11s} history={history:6d} "
                f"partial_update+predict={update_s * 1e3:8.3f} ms "
                f"predict_proba(whole)={full_s * 1e3:9.3f} ms",
                flush=True,
            )
    return rows


def _summary(rows: list) -> dict[tuple[str, str], dict[str, float]]:
    """Per (dataset, model): accuracy mean and sd over seeds, mean CPU and wall seconds, seed count."""
    out = {}
    for key in sorted({(r[0], r[1]) for r in rows}):
        sel = np.array([r[3:] for r in rows if (r[0], r[1]) == key], dtype=float)
        out[key] = {
            "mean": sel[:, 0].mean(),
            "sd": sel[:, 0].std(),
            "fit_cpu": sel[:, 1].mean(),
            "fit_wall": sel[:, 2].mean(),
            "pred_cpu": sel[:, 3].mean(),
            "pred_wall": sel[:, 4].mean(),
            "n": len(sel),
        }
    return out


def _curve_summary(curve: list) -> dict[tuple[str, str], dict[float, tuple[float, float]]]:
    out: dict[tuple[str, str], dict[float, tuple[float, float]]] = {}
    for name, model, _seed, fraction, _acc in curve:
        accs = [r[4] for r in curve if (r[0], r[1], r[3]) == (name, model, fraction)]
        out.setdefault((name, model), {})[fraction] = (float(np.mean(accs)), float(np.std(accs)))
    return out


def _portable(command: str) -> str:
    """The command with machine paths replaced by placeholders (data folder, aeon's Python)."""
    words = command.split()
    for i, word in enumerate(words[:-1]):
        if word == "--data-home":
            words[i + 1] = "$AAREN_TS_DATA"
        if word == "--aeon-python":
            words[i + 1] = "$AAREN_TS_AEON_PYTHON"
    return " ".join(words)


def _cell(summary: dict, name: str, model: str) -> str:
    stats = summary.get((name, model))
    return f"{stats['mean']:.2f} ± {stats['sd']:.2f}" if stats else ""


def _ten_problems_table(summary: dict, models: list[str], ran: set[str], missing: dict[str, str]) -> list:
    names = [*PAPER_ACCURACY, *sorted(n for n in ran if n not in PAPER_ACCURACY)]
    lines = [
        f"| dataset | {AAREN} % (this run) | paper (Aaren) % | "
        + " | ".join(f"{m} %" for m in models)
        + " |",
        "|---|---|---|" + "---|" * len(models),
    ]
    for name in names:
        paper = PAPER_ACCURACY.get(name)
        paper_cell = f"{paper:.2f}" if paper is not None else "(not in the paper)"
        if name in ran:
            ours = _cell(summary, name, AAREN)
            peers = [_cell(summary, name, m) for m in models]
        else:
            ours = missing.get(name, "not run")
            peers = [""] * len(models)
        lines.append(f"| {name} | {ours} | {paper_cell} | " + " | ".join(peers) + " |")
    return lines


def write_report(
    rows: list,
    curve: list,
    stream_rows: list,
    notes: list[str],
    context: dict[str, Any],
    output: str,
) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    summary = _summary(rows)
    curves = _curve_summary(curve)
    ran = {r[0] for r in rows}
    peer_models = [m for m in PEERS if any(k[1] == m for k in summary)]
    params = context["params"]
    split = (
        "resamples of TRAIN+TEST with TRAIN's class counts, seed s on resample s (0: the archive's split)"
        if context.get("resample")
        else "archive TRAIN/TEST split"
    )
    lines = [
        f"# AarenClassifier against aeon's convolution classifiers (UEA, {split})",
        "",
        f"Command: `{_portable(context['command'])}`",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPU(s); torch {torch.__version__}, "
        f"{torch.get_num_threads()} thread; {context['aeon'] or 'aeon not run'}, in its own Python, one "
        "thread per classifier (n_jobs=1; OMP, MKL, OpenBLAS and numba threads 1). "
        f"{AAREN} parameters: defaults"
        + (f" except {', '.join(f'{k}={v!r}' for k, v in params.items())}" if params else "")
        + "; the peers' defaults. Peers see series zero-padded to the longest length of the dataset (at "
        "least 9 points); Aaren reads unequal lengths as they are.",
        "",
        "## The paper's ten problems (test accuracy %, mean ± sd over seeds)",
        "",
        *_ten_problems_table(summary, peer_models, ran, context["missing"]),
        "",
        "## Accuracy and cost",
        "",
        "Mean over seeds of the CPU seconds (this process or the aeon process, all its threads) and wall "
        "seconds of `fit` (on TRAIN) and `predict` (on TEST).",
        "",
        "| dataset | model | accuracy % | seeds | fit CPU s | fit wall s | predict CPU s | predict wall s |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for (name, model), s in summary.items():
        lines.append(
            f"| {name} | {model} | {s['mean']:.2f} ± {s['sd']:.2f} | {s['n']} | {s['fit_cpu']:.1f} | "
            f"{s['fit_wall']:.1f} | {s['pred_cpu']:.2f} | {s['pred_wall']:.2f} |"
        )
    lines += _paired_lines(rows, bool(context.get("resample")))
    if curves:
        fractions = sorted({r[3] for r in curve})
        lines += [
            "",
            "## Accuracy against the fraction of each test series seen",
            "",
            f"{AAREN} (streamed): one model per seed, fitted on whole TRAIN series; each test series is "
            "fed through `partial_update` and classified by `predict_proba()` when the fraction has "
            "arrived (at least one point). MiniRocket (trained per prefix): one model per fraction and "
            "seed, trained on the same fraction of each TRAIN series and tested on the test prefixes.",
            "",
            "| dataset | model | " + " | ".join(f"{f:.0%}" for f in fractions) + " |",
            "|---|---|" + "---|" * len(fractions),
        ]
        for (name, model), by_fraction in sorted(curves.items()):
            cells = [
                f"{by_fraction[f][0]:.2f} ± {by_fraction[f][1]:.2f}" if f in by_fraction else ""
                for f in fractions
            ]
            lines.append(f"| {name} | {model} | " + " | ".join(cells) + " |")
    if stream_rows:
        lines += [
            "",
            "## Streaming: cost of one new time step (1 series)",
            "",
            "| backbone | history | partial_update + predict_proba() ms | predict_proba(whole series) ms |",
            "|---|---|---|---|",
        ]
        lines += [f"| {b} | {h} | {u * 1e3:.3f} | {f * 1e3:.3f} |" for b, h, u, f in stream_rows]
        for backbone in ("aaren", "transformer"):
            sel = [r for r in stream_rows if r[0] == backbone]
            if len(sel) == 2:
                lines.append("")
                lines.append(
                    f"{backbone}: partial_update cost ratio (history {sel[1][1]} / {sel[0][1]}) = "
                    f"{sel[1][2] / sel[0][2]:.2f}; "
                    f"re-running predict_proba ratio = {sel[1][3] / sel[0][3]:.1f}"
                )
    lines += _parts_lines(context.get("parts", []))
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    report = RESULTS / f"{output}.md"
    report.write_text("\n".join(lines) + "\n")
    _plot(summary, stream_rows, RESULTS / f"{output}.png")
    if curves:
        _plot_curve(curves, RESULTS / f"{output}_curve.png")
    return report


def _paired_lines(rows: list, resample: bool) -> list[str]:
    """The section pairing each peer with AarenClassifier seed by seed (two seeds or more)."""
    table = []
    for model in [m for m in PEERS if any(r[1] == m for r in rows)]:
        for name, d in paired_differences(rows, model, AAREN).items():
            table.append(
                f"| {name} | {model} | {d['mean']:+.2f} ± {d['se']:.2f} | {d['n']} | "
                f"{d['wins']} / {d['ties']} / {d['losses']} |"
            )
    if not table:
        return []
    each = "each seed on its own resample of the split" if resample else "every seed on the same split"
    return [
        "",
        f"## {AAREN} against each peer, paired by seed",
        "",
        f"{AAREN}'s test accuracy minus the peer's on the same split ({each}), in points: the mean "
        "over seeds ± its standard error, and the seeds on which it was better / equal / worse.",
        "",
        "| dataset | peer | difference (points) | seeds | better / equal / worse |",
        "|---|---|---|---|---|",
        *table,
    ]


def _parts_lines(parts: list) -> list[str]:
    """The section on the mixture's parts (rows of :func:`run_aaren`'s ``parts``)."""
    if not parts:
        return []
    lines = [
        "",
        f"## {AAREN}'s parts on the test split",
        "",
        "The same fitted models, scored with the network's weight in the mixture set to 0 (the random "
        "kernels' ridge classifiers alone) and to 1 (the network alone) at every prefix length. A "
        "diagnostic: the weights the classifier uses are chosen on training series held out from a "
        "network and ridge classifiers fitted on the others, never on these test series.",
        "",
        "| dataset | classifier % | kernels alone % | network alone % | by seed (classifier / kernels / "
        "network) |",
        "|---|---|---|---|---|",
    ]
    for name in sorted({p[0] for p in parts}):
        sel = np.array([p[2:] for p in parts if p[0] == name], dtype=float)
        means = " | ".join(f"{m:.2f} ± {sd:.2f}" for m, sd in zip(sel.mean(0), sel.std(0), strict=True))
        seeds = "; ".join(" / ".join(f"{v:.2f}" for v in row) for row in sel)
        lines.append(f"| {name} | {means} | {seeds} |")
    return lines


def _plot(summary: dict, stream_rows: list, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    datasets = sorted({k[0] for k in summary})
    models = sorted({k[1] for k in summary})
    width = 0.8 / max(len(models), 1)
    for i, model in enumerate(models):
        means = [summary[(d, model)]["mean"] if (d, model) in summary else np.nan for d in datasets]
        sds = [summary[(d, model)]["sd"] if (d, model) in summary else 0.0 for d in datasets]
        axes[0].bar(np.arange(len(datasets)) + i * width, means, width, yerr=sds, label=model)
    for j, name in enumerate(datasets):
        if name in PAPER_ACCURACY:
            axes[0].hlines(PAPER_ACCURACY[name], j - 0.1, j + 0.9, colors="k", linestyles="dashed")
    axes[0].set_xticks(np.arange(len(datasets)) + 0.4 - width / 2, datasets, fontsize=8)
    axes[0].set_ylabel("test accuracy %")
    axes[0].set_ylim(50, 101)
    axes[0].legend(fontsize=7, loc="lower left")
    axes[0].set_title("Accuracy (dashed: the paper's Aaren)")
    for backbone in ("aaren", "transformer"):
        sel = [r for r in stream_rows if r[0] == backbone]
        if sel:
            axes[1].plot(
                [r[1] for r in sel], [r[2] * 1e3 for r in sel], "o-", label=f"{backbone} partial_update"
            )
            axes[1].plot(
                [r[1] for r in sel], [r[3] * 1e3 for r in sel], "s--", label=f"{backbone} re-predict"
            )
    axes[1].set_xscale("log")
    axes[1].set_yscale("log")
    axes[1].set_xlabel("history length (steps)")
    axes[1].set_ylabel("ms per new step")
    if stream_rows:
        axes[1].legend(fontsize=7)
    axes[1].set_title("Streaming cost per step")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _plot_curve(curves: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = sorted({k[0] for k in curves})
    fig, axes = plt.subplots(1, len(datasets), figsize=(4.5 * len(datasets), 3.8), squeeze=False)
    for ax, name in zip(axes[0], datasets, strict=True):
        for (dataset, model), by_fraction in sorted(curves.items()):
            if dataset != name:
                continue
            fractions = sorted(by_fraction)
            means = [by_fraction[f][0] for f in fractions]
            sds = [by_fraction[f][1] for f in fractions]
            style = "o-" if model.startswith(AAREN) else "s--"
            ax.errorbar([100 * f for f in fractions], means, yerr=sds, fmt=style, capsize=3, label=model)
        ax.set_title(name)
        ax.set_xlabel("% of each test series seen")
        ax.set_ylabel("test accuracy %")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _available(names: list[str], data_home: str | None) -> tuple[dict[str, tuple], dict[str, str], list]:
    datasets, missing, notes = {}, {}, []
    for name in names:
        try:
            datasets[name] = _load(name, data_home)
        except FileNotFoundError:
            missing[name] = "not on this machine"
            print(f"{name}: not in the data folder, listed without a run", flush=True)
        except Exception as err:
            missing[name] = "not readable"
            notes.append(f"{name} skipped: {type(err).__name__}: {err}")
            print(notes[-1], flush=True)
    return datasets, missing, notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--datasets", nargs="+", default=None, help="default: every registered UEA problem found"
    )
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default: 1)")
    parser.add_argument(
        "--param", type=parse_param, action="append", default=[], help="an AarenClassifier NAME=VALUE"
    )
    parser.add_argument("--aeon-python", default=os.environ.get(AEON_PYTHON_ENV), help="Python with aeon")
    parser.add_argument("--peers", nargs="*", default=list(PEERS), choices=list(PEERS))
    parser.add_argument("--skip-peers", action="store_true", help="no aeon subprocess")
    parser.add_argument("--fractions", nargs="+", type=float, default=list(FRACTIONS))
    parser.add_argument("--transformer", action="store_true", help="also the Transformer backbone")
    parser.add_argument("--skip-streaming", action="store_true", help="no streaming-cost section")
    parser.add_argument(
        "--resample",
        action="store_true",
        help="seed s on resample s of TRAIN+TEST (TRAIN's class counts; 0: the archive's split)",
    )
    parser.add_argument("--quick", action="store_true", help="BasicMotions, seed 0, 5 epochs: a smoke run")
    parser.add_argument("--output", default="classification", help="base name of the result files")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    params = dict(args.param)
    if args.quick:
        args.datasets, args.seeds = args.datasets or ["BasicMotions"], [0]
        params.setdefault("max_epochs", 5)
    names = args.datasets or list_datasets("classification")
    datasets, missing, notes = _available(names, args.data_home)
    peers = [] if args.skip_peers else args.peers
    fractions = tuple(sorted(args.fractions))
    peer_rows, peer_curve, peer_notes, aeon_version = run_peers(
        datasets, args.seeds, peers, fractions, args.aeon_python, args.resample
    )
    rows, curve, aaren_notes, parts = run_aaren(
        datasets, args.seeds, params, fractions, args.transformer, args.resample
    )
    stream_rows = [] if args.skip_streaming else run_streaming(args.data_home)
    command = "python benchmarks/classification.py " + " ".join(argv if argv is not None else sys.argv[1:])
    context = {
        "command": command.strip(),
        "params": params,
        "aeon": aeon_version,
        "missing": missing,
        "parts": parts,
        "resample": args.resample,
    }
    report = write_report(
        rows + peer_rows,
        curve + peer_curve,
        stream_rows,
        notes + peer_notes + aaren_notes,
        context,
        args.output,
    )
    print(report.read_text())
    print(f"written: {report}, {report.with_suffix('.png')} and {report.stem}_curve.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
