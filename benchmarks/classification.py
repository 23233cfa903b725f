"""Classification benchmark: AarenClassifier with default parameters against peers on UEA data.

For each dataset (the archive's TRAIN/TEST split) and seed, it fits and scores

* ``AarenClassifier()`` (defaults, no tuning),
* ``AarenClassifier(backbone="transformer")`` (the KV-cached causal Transformer baseline),
* sktime's ``RocketClassifier`` (padded to equal length where needed),
* one sktime deep classifier that needs no tensorflow (``FCNClassifierTorch``, 50 epochs; its default
  of 2000 epochs takes hours here), on ``--peer-seeds`` (default: seed 0 only) to bound the run time,

skipping any peer that cannot be imported (and saying so). It then measures the cost of one
``partial_update`` step at a history of 10 and of 10,000 steps, against re-running ``predict_proba`` on
the growing series, for both backbones.

Writes ``benchmarks/results/classification.md`` (tables) and ``classification.png`` (plots)::

    python benchmarks/classification.py                       # all three datasets, seeds 0 1 2
    python benchmarks/classification.py --datasets JapaneseVowels --seeds 0 --skip-peers

Real data are read from ``--data-home`` (default ``$AAREN_TS_DATA``); JapaneseVowels and BasicMotions
also ship with sktime.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

from aaren_ts.datasets.reference import paper_accuracy

RESULTS = Path(__file__).resolve().parent / "results"
#: This project's accuracy targets (%) for AarenClassifier with default parameters (the paper's own
#: figures, printed beside them, come from aaren_ts.datasets.reference).
TARGETS = {"JapaneseVowels": 96.7, "UWaveGestureLibrary": 82.0, "BasicMotions": 100.0}


def _models(
    seed: int, skip_peers: bool, pad_length: int
) -> tuple[dict[str, Callable[[], object]], list[str]]:
    """Factories of the compared classifiers, and notes on peers that could not be imported."""
    from aaren_ts import AarenClassifier

    models: dict[str, Callable[[], object]] = {
        "AarenClassifier": lambda: AarenClassifier(random_state=seed),
        "AarenClassifier(transformer)": lambda: AarenClassifier(backbone="transformer", random_state=seed),
    }
    notes: list[str] = []
    if skip_peers:
        return models, notes
    from sktime.transformations.panel.padder import PaddingTransformer

    def pad() -> PaddingTransformer:
        # peers without unequal-length support see series zero-padded to the longest length of the
        # dataset (train and test lengths only; no labels)
        return PaddingTransformer(pad_length=pad_length)

    if importlib.util.find_spec("numba") is None:
        notes.append("RocketClassifier skipped: it needs numba, which is not installed")
    else:
        from sktime.classification.kernel_based import RocketClassifier

        models["RocketClassifier"] = lambda: pad() * RocketClassifier(random_state=seed)
    try:
        from sktime.classification.deep_learning.fcn import FCNClassifierTorch

        FCNClassifierTorch(num_epochs=1)  # fails here if its soft dependencies are missing
        models["FCNClassifierTorch(50 epochs)"] = lambda: (
            pad() * FCNClassifierTorch(num_epochs=50, batch_size=16, random_state=seed)
        )
    except Exception as err:
        notes.append(f"FCNClassifierTorch skipped: {type(err).__name__}: {err}")
    notes.append("tensorflow-based sktime deep classifiers are not run (tensorflow is not installed)")
    return models, notes


def _load(name: str, data_home: str | None) -> tuple[object, np.ndarray, object, np.ndarray]:
    from aaren_ts.datasets import load_uea

    kw = {"data_home": data_home, "download_if_missing": False}
    X_train, y_train = load_uea(name, "train", return_type="nested_univ", **kw)
    X_test, y_test = load_uea(name, "test", return_type="nested_univ", **kw)
    return X_train, y_train, X_test, y_test


def run_accuracy(
    datasets: list[str], seeds: list[int], data_home: str | None, skip_peers: bool, peer_seeds: list[int]
) -> tuple:
    rows = []  # (dataset, model, seed, accuracy %, fit s, predict s)
    notes: list[str] = []
    for name in datasets:
        try:
            X_train, y_train, X_test, y_test = _load(name, data_home)
            pad_length = max(len(X.iloc[i, 0]) for X in (X_train, X_test) for i in range(len(X)))
        except Exception as err:
            notes.append(f"{name} skipped: {type(err).__name__}: {err}")
            print(notes[-1], flush=True)
            continue
        for seed in seeds:
            models, model_notes = _models(seed, skip_peers or seed not in peer_seeds, pad_length)
            notes.extend(n for n in model_notes if n not in notes)
            for model_name, factory in models.items():
                try:
                    est = factory()
                    start = time.perf_counter()
                    est.fit(X_train, y_train)
                    fit_s = time.perf_counter() - start
                    start = time.perf_counter()
                    acc = 100.0 * float(np.mean(np.asarray(est.predict(X_test)) == np.asarray(y_test)))
                    pred_s = time.perf_counter() - start
                except Exception as err:
                    notes.append(f"{model_name} failed on {name} (seed {seed}): {type(err).__name__}: {err}")
                    traceback.print_exc()
                    continue
                rows.append((name, model_name, seed, acc, fit_s, pred_s))
                print(
                    f"{name:22s} {model_name:32s} seed={seed} acc={acc:6.2f}% fit={fit_s:6.1f}s "
                    f"predict={pred_s:5.2f}s",
                    flush=True,
                )
    return rows, notes


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


def _summary(rows: list) -> dict[tuple[str, str], tuple[float, float, float, int]]:
    out = {}
    for key in sorted({(r[0], r[1]) for r in rows}):
        sel = [r for r in rows if (r[0], r[1]) == key]
        acc = np.array([r[3] for r in sel])
        out[key] = (acc.mean(), acc.std(), float(np.mean([r[4] for r in sel])), len(sel))
    return out


def _portable(command: str) -> str:
    """The command with the data folder's location replaced by a placeholder (no machine paths)."""
    words = command.split()
    for i, word in enumerate(words[:-1]):
        if word == "--data-home":
            words[i + 1] = "$AAREN_TS_DATA"
    return " ".join(words)


def write_report(rows: list, stream_rows: list, notes: list[str], command: str) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    summary = _summary(rows)
    lines = [
        "# AarenClassifier benchmark (UEA, archive TRAIN/TEST split)",
        "",
        f"Command: `{_portable(command)}`",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPU(s), torch {torch.__version__}, "
        f"torch threads {torch.get_num_threads()}; default parameters for every model "
        "(FCN: 50 epochs, batch 16; peers run on --peer-seeds only).",
        "",
        "## Test accuracy (mean ± std over seeds) and mean fit time",
        "",
        "| dataset | model | accuracy % | fit s | seeds | target % | paper (Aaren) % |",
        "|---|---|---|---|---|---|---|",
    ]
    for (name, model), (mean, std, fit_s, n) in summary.items():
        target = TARGETS.get(name, "") if model == "AarenClassifier" else ""
        paper = paper_accuracy(name) if model.startswith("AarenClassifier") else None
        paper = f"{paper:.2f}" if paper is not None else ""
        lines.append(
            f"| {name} | {model} | {mean:.2f} ± {std:.2f} | {fit_s:.1f} | {n} | {target} | {paper} |"
        )
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
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    report = RESULTS / "classification.md"
    report.write_text("\n".join(lines) + "\n")
    _plot(summary, stream_rows)
    return report


def _plot(summary: dict, stream_rows: list) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(13, 4.5))
    datasets = sorted({k[0] for k in summary})
    models = sorted({k[1] for k in summary})
    width = 0.8 / max(len(models), 1)
    for i, model in enumerate(models):
        means = [summary.get((d, model), (np.nan,))[0] for d in datasets]
        stds = [summary.get((d, model), (0, 0))[1] for d in datasets]
        axes[0].bar(np.arange(len(datasets)) + i * width, means, width, yerr=stds, label=model)
    for j, d in enumerate(datasets):
        if d in TARGETS:
            axes[0].hlines(TARGETS[d], j - 0.1, j + 0.9, colors="k", linestyles="dashed")
    axes[0].set_xticks(np.arange(len(datasets)) + 0.4 - width / 2, datasets)
    axes[0].set_ylabel("test accuracy %")
    axes[0].set_ylim(50, 101)
    axes[0].legend(fontsize=7, loc="lower left")
    axes[0].set_title("Accuracy (dashed: target)")
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
    axes[1].legend(fontsize=7)
    axes[1].set_title("Streaming cost per step")
    fig.tight_layout()
    fig.savefig(RESULTS / "classification.png", dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(TARGETS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default: 1)")
    parser.add_argument("--peer-seeds", nargs="+", type=int, default=[0], help="seeds run for the peers")
    parser.add_argument("--skip-peers", action="store_true", help="only the two Aaren variants")
    parser.add_argument("--skip-streaming", action="store_true")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    command = "python benchmarks/classification.py " + " ".join(argv if argv is not None else sys.argv[1:])
    rows, notes = run_accuracy(args.datasets, args.seeds, args.data_home, args.skip_peers, args.peer_seeds)
    stream_rows = [] if args.skip_streaming else run_streaming(args.data_home)
    report = write_report(rows, stream_rows, notes, command.strip())
    print(report.read_text())
    print(f"written: {report} and {report.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
