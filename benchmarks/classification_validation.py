"""Score AarenClassifier on validation data cut from the UEA training sets, where defaults are chosen.

For each dataset and seed the archive's TRAIN split is cut into stratified folds; an ``AarenClassifier``
(its defaults with ``random_state`` set to the seed; ``--param name=value`` changes one) is fitted on
all folds but one and streamed through each series of the held-out fold, which gives its accuracy
after each of ``--fractions`` of every series (the last, 1.0, is ``predict``'s). The fitted model's
parts are scored on the same fold as a diagnostic: its random kernels alone and its network alone
(:func:`classification.mixture_parts`). Every held-out series counts once; the report gives the mean
and standard deviation over seeds. No test series is read::

    python benchmarks/classification_validation.py --data-home $AAREN_TS_DATA --seeds 0 1 2

With ``--aeon-python`` (as in ``classification.py``), aeon's MiniRocket, MultiRocket and
MultiRocket-Hydra are fitted on the same folds with the same seeds, one thread each, and scored on the
same held-out series: the peers' validation figures beside the defaults'. (The defaults were chosen on
folds of these training sets, seeds 0, 1, 2, so on those seeds their figures are optimistic; other
seeds cut other folds.)

With ``--resample``, seed ``s`` cuts its folds from the training part of resample ``s`` of the
archive's split (TRAIN and TEST pooled and redrawn with TRAIN's class counts, as in
``classification.py --resample``; resample 0 is TRAIN itself) instead of from TRAIN: validation over
several training sets, none of whose held-out series are that resample's test series.

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
from _common import markdown_table, parse_param, resample_split, results_dir
from classification import (
    AEON_PYTHON_ENV,
    PEERS,
    mixture_parts,
    no_whole_series_floor,
    run_peers,
    stream_curve,
    streamed_parts,
    whole_series_floors,
)

DATASETS = ("UWaveGestureLibrary", "JapaneseVowels", "BasicMotions")
#: The report's name for MiniRocket trained and scored on a fraction of each series.
PER_PREFIX = "MiniRocket trained per prefix"
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

    from aaren_ts import AarenClassifier

    y = np.asarray(y)
    right: dict[str, float] = {}
    for fit_idx, held_idx in fold_splits(y, seed, n_folds):
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


def fold_splits(y: np.ndarray, seed: int, n_folds: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The (fitted, held-out) indices of each fold: stratified, shuffled with ``seed``."""
    from sklearn.model_selection import StratifiedKFold

    folds = StratifiedKFold(n_folds, shuffle=True, random_state=seed)
    return list(folds.split(np.zeros(len(y)), y))


def training_part(name: str, seed: int, resample: bool, data_home: str | None) -> tuple[list, np.ndarray]:
    """The series and labels seed ``seed`` cuts its folds from: the archive's TRAIN split, or with
    ``resample`` the training part of resample ``seed`` (:func:`_common.resample_split`)."""
    from aaren_ts.datasets import load_uea

    kw = {"data_home": data_home, "download_if_missing": False, "return_type": "list"}
    X, y = load_uea(name, "train", **kw)
    if not resample:
        return X, np.asarray(y)
    X, y, _, _ = resample_split(X, y, *load_uea(name, "test", **kw), seed)
    return X, y


def peers_out_of_fold(
    data: dict[str, tuple[Sequence[np.ndarray], np.ndarray]],
    seeds: Sequence[int],
    n_folds: int,
    aeon_python: str,
    fractions: Sequence[float] = (),
) -> tuple[dict[str, dict[str, dict[int, float]]], list[str], str]:
    """Out-of-fold accuracy % of aeon's peers on the folds of :func:`out_of_fold_accuracy`:
    ``{dataset: {peer: {seed: accuracy}}}``, the worker's notes and aeon's version line. With
    ``fractions``, also MiniRocket trained and scored on that fraction of each series (peer
    ``f"{PER_PREFIX} {fraction}"``)."""
    accuracy: dict[str, dict[str, dict[int, float]]] = {}
    notes: list[str] = []
    version = ""
    for seed in seeds:
        cuts, held = {}, {}
        for name, (X, y) in data.items():
            y = np.asarray(y)
            for k, (fit_idx, held_idx) in enumerate(fold_splits(y, seed, n_folds)):
                key = f"{name} fold {k}"
                cuts[key] = ([X[i] for i in fit_idx], y[fit_idx], [X[i] for i in held_idx], y[held_idx])
                held[key] = (name, len(held_idx) / len(y))
        rows, curve, seed_notes, version = run_peers(cuts, [seed], list(PEERS), tuple(fractions), aeon_python)
        notes += seed_notes
        right: dict[tuple[str, str], list[float]] = {}
        for key, peer, _, acc, *_ in rows:
            name, share = held[key]
            right.setdefault((name, peer), []).append(acc * share)
        for key, _, _, fraction, acc in curve:
            name, share = held[key]
            right.setdefault((name, f"{PER_PREFIX} {fraction}"), []).append(acc * share)
        for (name, peer), parts in right.items():
            if len(parts) == n_folds:  # (a peer that failed on a fold has no figure for this seed)
                accuracy.setdefault(name, {}).setdefault(peer, {})[seed] = sum(parts)
    return accuracy, notes, version


def write_report(
    results: dict[str, dict[int, dict[str, float]]],
    cpu: dict[str, float],
    args: Any,
    peers: tuple[dict[str, dict[str, dict[int, float]]], list[str], str] | None = None,
) -> str:
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
    command = " ".join(
        [
            "python benchmarks/classification_validation.py --data-home $AAREN_TS_DATA --datasets",
            *args.datasets,
            f"--seeds {' '.join(map(str, args.seeds))} --folds {args.folds}",
            f"--fractions {' '.join(map(str, args.fractions))}",
            *(f"--param {k}={json.dumps(v)}" for k, v in args.param),
            *([f"--floors {' '.join(f'{f:g}' for f in args.floors)}"] if args.floors else []),
            *([f"--aeon-python ${AEON_PYTHON_ENV}"] if peers is not None else []),
            *(["--resample"] if getattr(args, "resample", False) else []),
        ]
    )
    return "\n".join(
        [
            "# AarenClassifier on validation data cut from the training sets",
            "",
            f"Command: `{command}`",
            "",
            (
                "Out-of-fold accuracy % on the training parts of resamples of the archive's split (seed s: "
                "resample s, TRAIN's class counts, 0 the archive's TRAIN; "
                if getattr(args, "resample", False)
                else "Out-of-fold accuracy % on the archive's TRAIN splits ("
            )
            + f"{args.folds} stratified folds; mean ± sd "
            f"over seeds {', '.join(map(str, args.seeds))}), AarenClassifier's defaults"
            + (f" with {dict(args.param)}" if args.param else "")
            + (
                ". No series of a resample's test part is read."
                if getattr(args, "resample", False)
                else ". No test series is read."
            )
            + " The kernels and the network alone are the same fitted models' "
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
            *_peer_section(results, peers),
        ]
    )


def _peer_section(
    results: dict[str, dict[int, dict[str, float]]],
    peers: tuple[dict[str, dict[str, dict[int, float]]], list[str], str] | None,
) -> list[str]:
    """The report's lines on aeon's peers fitted on the same folds (none without them)."""
    if peers is None:
        return []
    accuracy, notes, version = peers

    def cell(values: list[float]) -> str:
        return f"{np.mean(values):.2f} ± {np.std(values):.2f} ({' / '.join(f'{v:.2f}' for v in values)})"

    per_prefix_peers = {p for by_peer in accuracy.values() for p in by_peer if p.startswith(PER_PREFIX)}
    early = sorted(float(p.rsplit(" ", 1)[1]) for p in per_prefix_peers)
    rows, early_rows = [], []
    for name, by_seed in results.items():
        seeds = list(by_seed)
        whole = [by_seed[s]["1.0"] for s in seeds if "1.0" in by_seed[s]]
        if whole:
            rows.append([name, "AarenClassifier", cell(whole)])
        for part in ("kernels alone", "network alone"):
            values = [by_seed[s][part] for s in seeds if part in by_seed[s]]
            if values:
                rows.append([name, f"AarenClassifier, {part}", cell(values)])
        by_peer = accuracy.get(name, {})
        for peer in PEERS:
            values = [by_peer[peer][s] for s in seeds if s in by_peer.get(peer, {})]
            rows.append([name, f"{peer} (aeon)", cell(values) if values else "–"])
        if early:
            streamed = [[by_seed[s].get(str(f)) for s in seeds] for f in early]
            per_prefix = [[by_peer.get(f"{PER_PREFIX} {f}", {}).get(s) for s in seeds] for f in early]
            for model, table in zip(
                ("AarenClassifier, streamed", f"{PER_PREFIX} (aeon)"), (streamed, per_prefix), strict=True
            ):
                figures = [[v for v in values if v is not None] for values in table]
                early_rows.append([name, model, *(cell(v) if v else "–" for v in figures)])
    return [
        f"aeon's peers ({version or 'not run'}; their defaults, the same seeds, one thread each) fitted on "
        "the same folds and scored on the same held-out series: out-of-fold accuracy % after the whole "
        "series, mean ± sd over seeds (each seed's figure in brackets). Peers see each cut's series "
        "zero-padded to one length.",
        "",
        markdown_table(["dataset", "model", "out-of-fold accuracy %"], rows),
        "",
        *(
            [
                "Early answers on the same held-out series: the classifier streamed through each, against "
                "MiniRocket trained and scored anew on that fraction of every series of the same folds "
                "(one model per fraction): accuracy % after each fraction.",
                "",
                markdown_table(
                    ["dataset", "model", *[f"after {f:g}" for f in early]],
                    early_rows,
                ),
                "",
            ]
            if early_rows
            else []
        ),
        *[f"- {note}" for note in notes],
    ]


def main(argv: list[str] | None = None) -> int:
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
    parser.add_argument(
        "--aeon-python",
        default=None,
        help=f"Python with aeon (${AEON_PYTHON_ENV} in classification.py): fit its peers on the same folds",
    )
    parser.add_argument(
        "--resample",
        action="store_true",
        help="seed s cuts its folds from the training part of resample s (0: the archive's TRAIN)",
    )
    parser.add_argument("--out", default=None, help="results folder (default benchmarks/results)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    results: dict[str, dict[int, dict[str, float]]] = {}
    cpu: dict[str, float] = {}
    data: dict[int, dict[str, tuple[list, np.ndarray]]] = {seed: {} for seed in args.seeds}
    for name in args.datasets:
        start = time.process_time()
        results[name] = {}
        for seed in args.seeds:
            X, y = data[seed][name] = training_part(name, seed, args.resample, args.data_home)
            scores = out_of_fold_accuracy(
                X, y, seed, args.folds, args.fractions, args.floors, **dict(args.param)
            )
            results[name][seed] = scores
            print(f"{name} seed={seed}: " + ", ".join(f"{k} {v:.2f}" for k, v in scores.items()), flush=True)
        cpu[name] = time.process_time() - start
    peers = None
    if args.aeon_python:
        early = [f for f in args.fractions if f < 1.0]
        accuracy: dict[str, dict[str, dict[int, float]]] = {}
        notes: list[str] = []
        for seed in args.seeds:  # each seed its own series (with --resample)
            by_name, seed_notes, version = peers_out_of_fold(
                data[seed], [seed], args.folds, args.aeon_python, early
            )
            notes += seed_notes
            for name, by_peer in by_name.items():
                for peer, by_seed in by_peer.items():
                    accuracy.setdefault(name, {}).setdefault(peer, {}).update(by_seed)
        peers = (accuracy, notes, version)
    out = results_dir(args.out)
    (out / "classification_validation.md").write_text(write_report(results, cpu, args, peers))
    (out / "classification_validation.json").write_text(
        json.dumps({"results": results, "cpu_s": cpu, "peers": peers[0] if peers else None}, indent=1)
    )
    print(f"wrote {out / 'classification_validation.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
