"""Score AarenClassifier on validation data cut from the UEA training sets, where defaults are chosen.

For each dataset and seed the archive's TRAIN split is cut into stratified folds; an ``AarenClassifier``
(its defaults with ``random_state`` set to the seed; ``--param name=value`` changes one) is fitted on
all folds but one and streamed through each series of the held-out fold, which gives its accuracy
after each of ``--fractions`` of every series (the last, 1.0, is ``predict``'s). The fitted model's
parts are scored on the same fold as a diagnostic: its random kernels alone and its network alone
(:func:`classification.mixture_parts`). Every held-out series counts once; the report gives the mean
and standard deviation over seeds. No test series is read::

    python benchmarks/classification_validation.py --data-home $AAREN_TS_DATA --seeds 0 1 2

Writes ``classification_validation.md`` and ``.json`` to ``--out`` (default ``benchmarks/results``).
One thread.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import markdown_table, parse_param, results_dir
from classification import (
    mixture_parts,
    no_whole_series_floor,
    stream_curve,
    streamed_parts,
    whole_series_floors,
)

DATASETS = ("UWaveGestureLibrary", "JapaneseVowels", "BasicMotions")
FRACTIONS = (0.25, 0.5, 1.0)


def out_of_fold_accuracy(
    X: Sequence[np.ndarray],
    y: np.ndarray,
    seed: int,
    n_folds: int,
    fractions: Sequence[float] = FRACTIONS,
    floors: Sequence[float] = (),
    **params: Any,
) -> dict[str, float]:
    """Out-of-fold accuracy % of ``AarenClassifier(random_state=seed, **params)`` on series ``X`` (each
    ``(n_channels, length)``) with labels ``y``: after each of ``fractions`` of every held-out series
    (keys ``"0.25"``, ...), and of its kernels alone and network alone (``"kernels alone"``,
    ``"network alone"``, and after each fraction short of the whole series ``"kernels alone 0.25"``,
    ``"network alone 0.25"``, ...; absent without random kernels). With ``floors``, the classifiers are fitted
    without the floor on the network's weight after the whole series (so the fractions' figures are
    those of no floor) and ``"floor F"`` is the accuracy each floor ``F`` would have given."""
    from contextlib import nullcontext

    from sklearn.model_selection import StratifiedKFold

    from aaren_ts import AarenClassifier

    y = np.asarray(y)
    right: dict[str, float] = {}
    folds = StratifiedKFold(n_folds, shuffle=True, random_state=seed)
    for fit_idx, held_idx in folds.split(np.zeros(len(y)), y):
        clf = AarenClassifier(**{"random_state": seed, "num_threads": 1, **params})
        with no_whole_series_floor() if floors else nullcontext():
            clf.fit([X[i] for i in fit_idx], y[fit_idx])
        held, truth = [X[i] for i in held_idx], y[held_idx]
        scores = dict(zip(map(str, fractions), stream_curve(clf, held, truth, tuple(fractions)), strict=True))
        parts = mixture_parts(clf, held, truth)
        if parts is not None:
            scores["kernels alone"], scores["network alone"] = parts
            early = tuple(f for f in fractions if f < 1.0)
            if early:
                kernels, network = streamed_parts(clf, held, truth, early)
                for part, curve in (("kernels alone", kernels), ("network alone", network)):
                    scores |= {f"{part} {f}": a for f, a in zip(early, curve, strict=True)}
            if floors:
                floored = whole_series_floors(clf, held, truth, floors)
                scores |= {f"floor {f:g}": a for f, a in zip(floors, floored, strict=True)}
        for key, accuracy in scores.items():
            right[key] = right.get(key, 0.0) + accuracy * len(held_idx)
    return {key: total / len(y) for key, total in right.items()}


def write_report(results: dict[str, dict[int, dict[str, float]]], cpu: dict[str, float], args: Any) -> str:
    """The Markdown report of ``results[dataset][seed][key]`` (accuracy %)."""
    floors = [f"floor {f:g}" for f in args.floors]
    keys = [str(f) for f in args.fractions] + ["kernels alone", "network alone", *floors]
    n_fixed = len(args.fractions)
    header = ["dataset", *[f"after {k} of each series" for k in keys[:n_fixed]], *keys[n_fixed:]]

    def cell(by_seed: dict[int, dict[str, float]], key: str) -> str:
        values = [scores[key] for scores in by_seed.values() if key in scores]
        return f"{np.mean(values):.2f} ± {np.std(values):.2f}" if values else "–"

    rows = [[name, *(cell(by_seed, key) for key in keys)] for name, by_seed in results.items()]
    early = [str(f) for f in args.fractions if f < 1.0]
    part_rows = [
        [name, part, *(cell(by_seed, f if part == "classifier" else f"{part} {f}") for f in early)]
        for name, by_seed in results.items()
        for part in ("classifier", "kernels alone", "network alone")
    ]
    params = " ".join(f"--param {k}={json.dumps(v)}" for k, v in args.param)
    command = (
        f"python benchmarks/classification_validation.py --data-home $AAREN_TS_DATA --datasets "
        f"{' '.join(args.datasets)} --seeds {' '.join(map(str, args.seeds))} --folds {args.folds} "
        f"--fractions {' '.join(map(str, args.fractions))} {params}"
        + (f" --floors {' '.join(f'{f:g}' for f in args.floors)}" if args.floors else "")
    ).strip()
    return "\n".join(
        [
            "# AarenClassifier on validation data cut from the training sets",
            "",
            f"Command: `{command}`",
            "",
            f"Out-of-fold accuracy % on the archive's TRAIN splits ({args.folds} stratified folds; mean ± sd "
            f"over seeds {', '.join(map(str, args.seeds))}), AarenClassifier's defaults"
            + (f" with {dict(args.param)}" if args.param else "")
            + ". No test series is read. The kernels and the network alone are the same fitted models' "
            "parts (the network's weight in the mixture set to 0 and to 1)."
            + (
                " Fitted without the floor on the network's weight after the whole series (the fractions' "
                "columns), and `floor F`: that weight raised to F where it was chosen lower, as fit does "
                "with its floor."
                if args.floors
                else ""
            )
            + " CPU seconds, all seeds and "
            "folds: " + ", ".join(f"{name} {s:.0f}" for name, s in cpu.items()) + ".",
            "",
            markdown_table(header, rows),
            "",
            *(
                [
                    "The same fitted models' parts streamed: accuracy % after each fraction of every "
                    "held-out series (the mixture's weights give the network little or no say early where "
                    "the held-out series showed it weaker there).",
                    "",
                    markdown_table(["dataset", "part", *[f"after {f}" for f in early]], part_rows),
                    "",
                ]
                if early
                else []
            ),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    from aaren_ts.datasets import load_uea

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--fractions", nargs="+", type=float, default=list(FRACTIONS))
    parser.add_argument("--param", type=parse_param, action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument(
        "--floors",
        nargs="+",
        type=float,
        default=[],
        metavar="F",
        help="also score these floors on the network's weight after the whole series (fitted without one)",
    )
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--out", default=None, help="results folder (default benchmarks/results)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    results: dict[str, dict[int, dict[str, float]]] = {}
    cpu: dict[str, float] = {}
    for name in args.datasets:
        kw = {"data_home": args.data_home, "download_if_missing": False, "return_type": "list"}
        X, y = load_uea(name, "train", **kw)
        start = time.process_time()
        results[name] = {}
        for seed in args.seeds:
            scores = out_of_fold_accuracy(
                X, y, seed, args.folds, args.fractions, args.floors, **dict(args.param)
            )
            results[name][seed] = scores
            print(f"{name} seed={seed}: " + ", ".join(f"{k} {v:.2f}" for k, v in scores.items()), flush=True)
        cpu[name] = time.process_time() - start
    out = results_dir(args.out)
    (out / "classification_validation.md").write_text(write_report(results, cpu, args))
    (out / "classification_validation.json").write_text(
        json.dumps({"results": results, "cpu_s": cpu}, indent=1)
    )
    print(f"wrote {out / 'classification_validation.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
