"""How AarenClassifier's whole-series answer would change with other rules for mixing its two parts.

The classifier's answer after a whole series is, in each member of its ensemble, a weighted mean of its
network's class distribution and its random kernels' (weight and factor on the network's scores chosen
in ``fit`` on held-out training series, the network's weight then raised to a floor of 0.5), and the
members' mean. This script fits the defaults without the floor (``random_state`` = each seed, one
thread) and keeps every member's two distributions for each scored series, then scores mixing rules
on them without fitting again:

* ``as chosen``: the weights and factors ``fit`` chose, no floor;
* ``floor F``: the network's weight after the whole series raised to ``F`` where it was chosen lower,
  as ``fit`` does with ``F = 0.5`` (the defaults' answer);
* ``weight W``: the network's weight ``W`` at every series, its scores untempered;
* ``geometric W``: the normalised product ``p_network^W p_kernels^(1 - W)``.

Series shorter than the median training length are answered with an earlier prefix length's map and
weight (as a stream at that step would be); the floor concerns the whole series' map only. Two rules
answer every series with the whole series' map instead (the kernels' ridge classifier fitted on whole
training series, and that map's weight and factor), as if a short series were known to be complete;
a stream cannot know that, so these are diagnostics of series of unequal lengths:

* ``whole map, floor 0.5``: the defaults' mixture with the whole series' map at every series;
* ``whole map, weight 0``: that map's kernels alone.

``--split validation`` (default) scores held-out series of folds cut from the archive's TRAIN split
(stratified, shuffled with the seed, as ``classification_validation.py`` cuts them): where rules may
be chosen. ``--split test`` fits on TRAIN and scores the TEST split: a diagnostic, never a choice::

    python benchmarks/classification_mixture.py --data-home $AAREN_TS_DATA --split validation
    python benchmarks/classification_mixture.py --data-home $AAREN_TS_DATA --split test

Writes ``classification_mixture_<split>.md`` and ``.json`` to ``--out`` (default ``benchmarks/results``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import markdown_table, parse_param, results_dir
from classification import _load, _one_part, no_whole_series_floor
from classification_validation import DATASETS, fold_splits, training_part

from aaren_ts.estimators.classification._inference import inference_batches
from aaren_ts.estimators.classification._kernels import WHOLE_SERIES_MIN_WEIGHT

FLOORS = (0.0, 0.3, 0.5)
WEIGHTS = (0.0, 0.3, 0.5, 1.0)
GEOMETRIC = (0.3, 0.5)


@torch.no_grad()
def member_parts(clf: Any, X: list[np.ndarray]) -> dict[str, np.ndarray]:
    """Every member's log class distributions of its network alone (scores untempered) and of its
    kernels alone, ``(n_members, n, n_classes)`` each, the factors and weights ``fit`` chose at the
    prefix length each series ends at, ``(n_members, n)``, and whether that is the whole series' map;
    with the suffix ``_whole``, the kernels' distributions, factors and weights of the whole series'
    map at every series."""
    from aaren_ts.nn.ensemble import member_networks

    panel = clf._panel(X)
    values, lengths = clf._scaled(panel)
    members = member_networks(clf.net_.module_)
    prefixes = members[0].kernel_prefixes.cpu().numpy()
    which = np.searchsorted(prefixes, lengths, side="right") - 1  # the map in use after each series
    last = np.full_like(which, len(prefixes) - 1)
    parts: dict[str, list] = {}
    for member in members:
        for suffix, maps in (("", which), ("_whole", last)):
            parts.setdefault(f"gain{suffix}", []).append(member.head_gain.numpy()[maps])
            parts.setdefault(f"weight{suffix}", []).append(member.head_weight.numpy()[maps])
    for part, network_weight, whole_map in (
        ("network", 1.0, False),
        ("kernels", 0.0, False),
        ("kernels_whole", 0.0, True),
    ):
        with _one_part(clf, network_weight):
            for member in members:
                out = []
                for _, x, mask in inference_batches(values, lengths, clf.batch_size, clf._device()):
                    _, state = member.encode(x, mask, every_step=False)
                    if whole_map:
                        features = _whole_map_features(member, state)
                    else:
                        features = member.current_features(state)
                    out.append(torch.log_softmax(member.logits(features), -1).numpy())
                parts.setdefault(part, []).append(np.concatenate(out))
    return {key: np.stack(value) for key, value in parts.items()} | {"whole": which == len(prefixes) - 1}


def _whole_map_features(member: Any, state: Any) -> torch.Tensor:
    """What ``member.logits`` reads after the steps of ``state``, with the kernels' map of whole series
    in place of the map of the longest prefix length up to the steps seen."""
    n_maps = len(member.kernel_prefixes)
    last = state.kernel_scores.unflatten(-1, (n_maps, member.n_classes))[..., -1, :]
    kernels = member._features_of_map(last, state.seen, torch.full_like(state.seen, n_maps - 1))
    z = member.readout_features(state.readout)
    return torch.cat([z, kernels.to(z.dtype)], dim=-1)


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def rule_answers(parts: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The class distribution ``(n, n_classes)`` each rule gives from :func:`member_parts`."""
    network, kernels = parts["network"], parts["kernels"]
    gain, weight = parts["gain"][..., None], parts["weight"][..., None]
    whole = parts["whole"][None, :, None]

    def mixed(w: Any, g: Any, kernels: np.ndarray = kernels) -> np.ndarray:
        return np.mean(w * _softmax(g * network) + (1 - w) * np.exp(kernels), axis=0)

    def floored(low: np.ndarray, floor: float, weight: np.ndarray, gain: np.ndarray) -> tuple:
        """The weights raised to ``floor`` where ``low``, their factors there 1 (as ``fit`` raises them)."""
        return np.where(low, floor, weight), np.where(low, 1.0, gain)

    rules = {"as chosen": mixed(weight, gain)}
    for floor in FLOORS[1:]:
        rules[f"floor {floor:g}"] = mixed(*floored(whole & (weight < floor), floor, weight, gain))
    for w in WEIGHTS:
        rules[f"weight {w:g}"] = mixed(w, 1.0)
    for w in GEOMETRIC:
        rules[f"geometric {w:g}"] = np.mean(_softmax(w * network + (1 - w) * kernels), axis=0)
    # the whole series' map at every series, with the defaults' floor
    floor, whole_kernels = WHOLE_SERIES_MIN_WEIGHT, parts["kernels_whole"]
    weight, gain = parts["weight_whole"][..., None], parts["gain_whole"][..., None]
    rules[f"whole map, floor {floor:g}"] = mixed(*floored(weight < floor, floor, weight, gain), whole_kernels)
    rules["whole map, weight 0"] = mixed(0.0, 1.0, whole_kernels)
    return rules


def cuts(name: str, seed: int, split: str, n_folds: int, data_home: str | None) -> list[tuple]:
    """``(fit series, fit labels, scored series, scored labels)`` of each fit."""
    if split == "test":
        X_train, y_train, X_test, y_test = _load(name, data_home)
        return [(X_train, np.asarray(y_train), X_test, np.asarray(y_test))]
    X, y = training_part(name, seed, False, data_home)
    return [
        ([X[i] for i in fit], y[fit], [X[i] for i in held], y[held])
        for fit, held in fold_splits(y, seed, n_folds)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS[:2]))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--split", choices=("validation", "test"), default="validation")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--param", type=parse_param, action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--out", default=None, help="results folder (default benchmarks/results)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    from aaren_ts import AarenClassifier

    right: dict[str, dict[str, dict[int, int]]] = {}
    counts: dict[str, dict[int, int]] = {}
    cpu: dict[str, float] = {}
    for name in args.datasets:
        start = time.process_time()
        for seed in args.seeds:
            for X_fit, y_fit, X_scored, y_scored in cuts(name, seed, args.split, args.folds, args.data_home):
                clf = AarenClassifier(random_state=seed, num_threads=1, **dict(args.param))
                with no_whole_series_floor():
                    clf.fit(X_fit, y_fit)
                codes = np.searchsorted(clf.classes_, y_scored)
                for rule, proba in rule_answers(member_parts(clf, X_scored)).items():
                    by_seed = right.setdefault(name, {}).setdefault(rule, {})
                    by_seed[seed] = by_seed.get(seed, 0) + int((proba.argmax(axis=1) == codes).sum())
                counts.setdefault(name, {})[seed] = counts.get(name, {}).get(seed, 0) + len(codes)
            print(f"{name} seed {seed}: done", flush=True)
        cpu[name] = time.process_time() - start
    accuracy = {
        name: {
            rule: {s: 100.0 * n / counts[name][s] for s, n in by_seed.items()}
            for rule, by_seed in rules.items()
        }
        for name, rules in right.items()
    }
    out = results_dir(args.out)
    stem = f"classification_mixture_{args.split}"
    (out / f"{stem}.md").write_text(_report(accuracy, right, counts, cpu, args))
    (out / f"{stem}.json").write_text(json.dumps({"accuracy": accuracy, "cpu_seconds": cpu}, indent=2))
    print((out / f"{stem}.md").read_text())
    return 0


def _report(accuracy: dict, right: dict, counts: dict, cpu: dict, args: Any) -> str:
    rules = list(next(iter(accuracy.values())))
    rows = [
        [
            rule,
            *(
                f"{np.mean(list(accuracy[name][rule].values())):.2f} "
                f"({sum(counts[name].values()) - sum(right[name][rule].values())} wrong)"
                for name in accuracy
            ),
        ]
        for rule in rules
    ]
    where = (
        "the archive's TEST split, fitted on TRAIN (a diagnostic: rules are never chosen here)"
        if args.split == "test"
        else f"held-out series of {args.folds} stratified folds cut from the archive's TRAIN split"
    )
    command = " ".join(
        [
            "python benchmarks/classification_mixture.py --data-home $AAREN_TS_DATA",
            f"--split {args.split} --datasets {' '.join(args.datasets)}",
            f"--seeds {' '.join(map(str, args.seeds))}",
            *([f"--folds {args.folds}"] if args.split == "validation" else []),
            *(f"--param {k}={json.dumps(v)}" for k, v in args.param),
        ]
    )
    return "\n".join(
        [
            f"# AarenClassifier's whole-series answer under other mixing rules ({args.split})",
            "",
            f"Command: `{command}`",
            "",
            f"Accuracy % on {where}; mean over seeds {', '.join(map(str, args.seeds))}, and the wrong "
            "answers summed over them. The defaults' answer is `floor 0.5`. CPU seconds: "
            + ", ".join(f"{name} {seconds:.0f}" for name, seconds in cpu.items())
            + ".",
            "",
            markdown_table(["rule", *accuracy], rows),
            "",
        ]
    )


if __name__ == "__main__":
    raise SystemExit(main())
