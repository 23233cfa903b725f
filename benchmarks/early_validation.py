"""Choose predict_early's confidence rule on validation data cut from the training sets.

For each dataset and seed, the archive's TRAIN split is cut into stratified folds; an
``AarenClassifier`` with the early-classification settings of ``early_classification.py`` is fitted on
all folds but one and gives the class probabilities after every time point of the held-out fold's
series. Every rule of the grid (``probability_threshold`` x ``consecutive_predictions``) is then
applied to those probabilities by the engine's own :class:`~aaren_ts.engine.early.ConfidenceRule`
state, and scored by aeon's harmonic mean of accuracy and earliness over all out-of-fold series.
No test series is read. The report gives the mean HM of each rule per dataset and over datasets, and
the rule that maximises the mean over datasets::

    python benchmarks/early_validation.py --data-home $AAREN_TS_DATA --seeds 0 1 2

``--lead-fractions 0.1 0.2 ...`` also scores, on the same probabilities, a rule the engine does not
offer (:func:`score_lead_rule`): decide at the first step ``t`` where the most probable class reaches
the threshold and has been the most probable for at least a fraction of the ``t`` steps seen, a
consistency that grows with the time seen where ``consecutive_predictions`` counts steps.

With ``--aeon-python`` (as in ``early_classification.py``), aeon's ``TEASER`` and
``ProbabilityThresholdEarlyClassifier`` (MiniRocket at each classification point, as there) are fitted
on the same folds with the same seeds and answer the same held-out series (equal-length datasets
only): their out-of-fold accuracy, earliness and harmonic mean beside those of the classifier's
default rule.

Writes ``early_validation.md`` and ``early_validation.json`` to ``--out`` (default
``benchmarks/results``). One thread.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import markdown_table, results_dir
from classification_validation import fold_splits
from early_classification import AAREN_PARAMS, AEON_MODELS, harmonic_mean, run_aeon

THRESHOLDS = (0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
CONSECUTIVE = (1, 2, 3, 5)
LEAD_THRESHOLDS = (0.6, 0.7, 0.75, 0.8, 0.85, 0.9)


def aeon_out_of_fold(
    X: list[np.ndarray], y: np.ndarray, seed: int, n_folds: int, aeon_python: str
) -> dict[str, tuple[float, float, float]]:
    """Out-of-fold accuracy, earliness and HM of aeon's early classifiers on the folds of
    :func:`out_of_fold_staged` (series of one length): ``{model: (accuracy, earliness, HM)}``."""
    labels = {model: np.empty(len(y), dtype=object) for model in AEON_MODELS}
    seen = {model: np.empty(len(y)) for model in AEON_MODELS}
    length = X[0].shape[1]
    for fit_idx, held_idx in fold_splits(y, seed, n_folds):
        data = ([X[i] for i in fit_idx], y[fit_idx], [X[i] for i in held_idx], y[held_idx])
        out = run_aeon(aeon_python, data, seed, "minirocket")["models"]
        for model in AEON_MODELS:
            labels[model][held_idx] = out[model]["labels"]
            seen[model][held_idx] = np.asarray(out[model]["decided_at"]) / length
    y = np.asarray(y, dtype=str)
    figures = {}
    for model in AEON_MODELS:
        accuracy, earliness = float(np.mean(labels[model].astype(str) == y)), float(np.mean(seen[model]))
        figures[model] = (accuracy, earliness, harmonic_mean(accuracy, earliness))
    return figures


def out_of_fold_staged(
    X: list[np.ndarray], y: np.ndarray, seed: int, n_folds: int, prefix_weight: float, **params: object
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Out-of-fold probabilities after every time point: ``(n, T, classes)``, lengths, class codes,
    and the threshold ``probability_threshold="auto"`` chose when fitting each series' fold
    (``params`` override the benchmark's classifier settings)."""
    from aaren_ts import AarenClassifier

    lengths = np.array([x.shape[1] for x in X])
    classes = np.unique(y)
    staged = np.zeros((len(X), int(lengths.max()), len(classes)))
    chosen = np.zeros(len(X))
    for fit_idx, held_idx in fold_splits(y, seed, n_folds):
        settings = {**AAREN_PARAMS, "probability_threshold": "auto", **params}
        clf = AarenClassifier(prefix_weight=prefix_weight, random_state=seed, num_threads=1, **settings)
        clf.fit([X[i] for i in fit_idx], y[fit_idx])
        if not np.array_equal(clf.classes_, classes):
            raise RuntimeError("a fold lacks a class; use fewer folds")
        held = np.stack(list(clf.staged_predict_proba([X[i] for i in held_idx])), axis=1)
        staged[held_idx, : held.shape[1]] = held  # (steps past a series' end are not read)
        chosen[held_idx] = clf.probability_threshold_
    return staged, lengths, np.searchsorted(classes, y), chosen


def _decide(
    staged: np.ndarray, lengths: np.ndarray, threshold: float, consecutive: int
) -> tuple[np.ndarray, np.ndarray]:
    from aaren_ts.engine.early import ConfidenceRule, decide_staged

    labels, at = decide_staged(
        torch.as_tensor(staged), torch.as_tensor(lengths), ConfidenceRule(threshold, consecutive)
    )
    return labels.numpy(), at.numpy()


def score_rule(
    staged: np.ndarray, lengths: np.ndarray, codes: np.ndarray, threshold: float, consecutive: int
) -> tuple[float, float, float]:
    """Accuracy, earliness and HM of one rule applied by the engine to the staged probabilities."""
    return _scores(*_decide(staged, lengths, threshold, consecutive), lengths, codes)


def score_chosen(
    staged: np.ndarray, lengths: np.ndarray, codes: np.ndarray, chosen: np.ndarray, consecutive: int
) -> tuple[float, float, float]:
    """Accuracy, earliness and HM of the rule with each series' own threshold ``chosen`` (its fold's
    ``"auto"``)."""
    labels, at = np.empty(len(codes), dtype=np.int64), np.empty(len(codes), dtype=np.int64)
    for threshold in np.unique(chosen):
        rows = chosen == threshold
        labels[rows], at[rows] = _decide(staged[rows], lengths[rows], float(threshold), consecutive)
    return _scores(labels, at, lengths, codes)


def _scores(
    labels: np.ndarray, at: np.ndarray, lengths: np.ndarray, codes: np.ndarray
) -> tuple[float, float, float]:
    accuracy, earliness = float(np.mean(labels == codes)), float(np.mean(at / lengths))
    return accuracy, earliness, harmonic_mean(accuracy, earliness)


def score_lead_rule(
    staged: np.ndarray, lengths: np.ndarray, codes: np.ndarray, threshold: float, fraction: float
) -> tuple[float, float, float]:
    """Accuracy, earliness and HM of the lead rule: a series is decided at the first step ``t`` (1-based)
    at which its most probable class has probability at least ``threshold`` and has been the most
    probable at each of the last ``ceil(fraction * t)`` steps (at least this one); never so: at its
    end, with its final prediction."""
    n, t_max, _ = staged.shape
    top, cls = staged.max(axis=-1), staged.argmax(axis=-1)  # (n, T)
    lead = np.ones((n, t_max), dtype=np.int64)  # steps the current most probable class has led
    for t in range(1, t_max):
        lead[:, t] = np.where(cls[:, t] == cls[:, t - 1], lead[:, t - 1] + 1, 1)
    steps = np.arange(1, t_max + 1)
    real = steps[None, :] <= lengths[:, None]
    hit = real & (top >= threshold) & (lead >= np.maximum(1, np.ceil(fraction * steps - 1e-9)))
    decided = hit.any(axis=1)
    first = hit.argmax(axis=1)
    rows = np.arange(n)
    final = cls[rows, lengths - 1]
    labels = np.where(decided, cls[rows, first], final)
    at = np.where(decided, first + 1, lengths)
    return _scores(labels, at, lengths, codes)


def _mean_sd(values: np.ndarray) -> str:
    return f"{values.mean():.3f} ± {values.std():.3f}"


def main() -> None:
    from aaren_ts.datasets import load_uea

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--datasets", nargs="+", default=["UWaveGestureLibrary", "BasicMotions", "JapaneseVowels"]
    )
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--prefix-weight", type=float, default=0.5)
    parser.add_argument("--n-estimators", type=int, default=AAREN_PARAMS["n_estimators"])
    parser.add_argument(
        "--lead-fractions", nargs="*", type=float, default=[], help="also score score_lead_rule"
    )
    parser.add_argument("--data-home", default=None)
    parser.add_argument(
        "--aeon-python", default=None, help="Python with aeon: fit its early classifiers on the same folds"
    )
    parser.add_argument("--out", default=None, help="results folder (default benchmarks/results)")
    args = parser.parse_args()
    from aaren_ts import AarenClassifier

    defaults = AarenClassifier()
    default_rule = (defaults.probability_threshold, defaults.consecutive_predictions)
    beside: dict[str, dict[str, list[tuple[float, float, float]]]] = {}  # dataset -> model -> per seed
    torch.set_num_threads(1)
    rules = [(t, c) for t in THRESHOLDS for c in CONSECUTIVE]
    lead_rules = [(t, f) for t in LEAD_THRESHOLDS for f in args.lead_fractions]
    hm: dict[str, np.ndarray] = {}  # dataset -> (seeds, rules)
    lead_hm: dict[str, np.ndarray] = {}  # dataset -> (seeds, lead rules)
    fit_s: dict[str, float] = {}
    auto_hm: dict[str, np.ndarray] = {}  # dataset -> (seeds,): probability_threshold="auto"
    auto_chosen: dict[str, list[list[float]]] = {}  # dataset -> the thresholds it chose, per seed
    for name in args.datasets:
        kw = {"data_home": args.data_home, "download_if_missing": False, "return_type": "list"}
        X, y = load_uea(name, "train", **kw)
        y = np.asarray(y)
        scores = np.empty((len(args.seeds), len(rules)))
        auto_hm[name], auto_chosen[name] = np.empty(len(args.seeds)), []
        lead_hm[name] = np.empty((len(args.seeds), len(lead_rules)))
        start = time.process_time()
        for s, seed in enumerate(args.seeds):
            staged, lengths, codes, chosen = out_of_fold_staged(
                X, y, seed, args.folds, args.prefix_weight, n_estimators=args.n_estimators
            )
            scores[s] = [score_rule(staged, lengths, codes, t, c)[2] for t, c in rules]
            auto_hm[name][s] = score_chosen(staged, lengths, codes, chosen, 1)[2]
            auto_chosen[name].append(sorted(set(chosen.tolist())))
            if args.aeon_python and len(set(lengths.tolist())) == 1:
                models = beside.setdefault(name, {})
                ours = score_rule(staged, lengths, codes, *default_rule)
                models.setdefault("AarenClassifier.predict_early (default rule)", []).append(ours)
                for model, figures in aeon_out_of_fold(X, y, seed, args.folds, args.aeon_python).items():
                    models.setdefault(f"aeon {model}", []).append(figures)
            lead_hm[name][s] = [score_lead_rule(staged, lengths, codes, t, f)[2] for t, f in lead_rules]
            best = rules[int(np.argmax(scores[s]))]
            print(f"{name} seed={seed}: best rule {best}, HM {scores[s].max():.3f}", flush=True)
        hm[name], fit_s[name] = scores, time.process_time() - start
    overall = np.mean([scores.mean(axis=0) for scores in hm.values()], axis=0)
    best = rules[int(np.argmax(overall))]
    header = ["probability_threshold", "consecutive_predictions", *args.datasets, "mean over datasets"]
    rows = []
    for r, (t, c) in enumerate(rules):
        cells = [_mean_sd(hm[name][:, r]) for name in args.datasets]
        mean = f"{overall[r]:.3f}"
        rows.append([t, c, *cells, f"**{mean}**" if (t, c) == best else mean])
    command = (
        "python benchmarks/early_validation.py --data-home $AAREN_TS_DATA "
        + " ".join(
            f"--{k.replace('_', '-')} {' '.join(map(str, v)) if isinstance(v, list) else v}"
            for k, v in vars(args).items()
            if k not in ("data_home", "out", "aeon_python") and v != []
        )
        + (" --aeon-python $AAREN_TS_AEON_PYTHON" if args.aeon_python else "")
    )
    settings = {**AAREN_PARAMS, "n_estimators": args.n_estimators}
    lines = [
        "# Early classification: the confidence rule chosen on validation data",
        "",
        f"Command: `{command}`",
        "",
        f"Out-of-fold harmonic mean of accuracy and earliness on the TRAIN splits ({args.folds} stratified "
        f"folds, seeds {', '.join(map(str, args.seeds))}; mean ± sd over seeds), for an AarenClassifier "
        f"with prefix_weight={args.prefix_weight} and {settings}. "
        "No test series is read. CPU seconds "
        "per dataset, all seeds and folds: "
        + ", ".join(f"{name} {s:.0f}" for name, s in fit_s.items())
        + ".",
        "",
        f"Best rule over the datasets: probability_threshold={best[0]}, consecutive_predictions={best[1]}.",
        "",
        markdown_table(header, rows),
        "",
        'probability_threshold="auto" (each fold\'s classifier chose its threshold on half of its own '
        "training series, held out from a network and ridge classifiers fitted on the other half), "
        "consecutive_predictions=1:",
        "",
        markdown_table(
            ["dataset", "HM", "thresholds chosen (per seed, one per fold)"],
            [
                [name, _mean_sd(auto_hm[name]), " / ".join(str(c) for c in auto_chosen[name])]
                for name in args.datasets
            ]
            + [["mean over datasets", f"{np.mean([v.mean() for v in auto_hm.values()]):.3f}", ""]],
        ),
        "",
    ]
    if lead_rules:
        lead_overall = np.mean([scores.mean(axis=0) for scores in lead_hm.values()], axis=0)
        lead_rows = []
        for r, (t, f) in enumerate(lead_rules):
            cells = [_mean_sd(lead_hm[name][:, r]) for name in args.datasets]
            lead_rows.append([t, f, *cells, f"{lead_overall[r]:.3f}"])
        k = int(np.argmax(lead_overall))
        lines += [
            "The lead rule (not the engine's; `score_lead_rule`): decide where the most probable class "
            "reaches the threshold and has been the most probable for at least the given fraction of the "
            f"steps seen. Its best, probability_threshold={lead_rules[k][0]} and fraction="
            f"{lead_rules[k][1]}: {lead_overall[k]:.3f} over the datasets, against {overall.max():.3f} for "
            "the engine's best rule.",
            "",
            markdown_table(
                ["probability_threshold", "fraction led", *args.datasets, "mean over datasets"], lead_rows
            ),
            "",
        ]
    if beside:
        aeon_rows = [
            [name, model, *(_mean_sd(np.array(column)) for column in zip(*figures, strict=True))]
            for name, models in beside.items()
            for model, figures in models.items()
        ]
        lines += [
            "aeon's early classifiers (MiniRocket at each classification point) fitted on the same folds "
            "with the same seeds, answering the same held-out series, beside the classifier's default "
            f"rule (probability_threshold={default_rule[0]}, consecutive_predictions={default_rule[1]}): "
            "out-of-fold accuracy, earliness and HM, mean ± sd over seeds (equal-length datasets).",
            "",
            markdown_table(["dataset", "model", "accuracy", "earliness", "HM"], aeon_rows),
            "",
        ]
    out_dir = results_dir(args.out)
    path = out_dir / "early_validation.md"
    path.write_text("\n".join(lines))
    saved = {
        "rules": rules,
        "hm": {k: v.tolist() for k, v in hm.items()},
        "best": best,
        "command": command,
        "auto_hm": {k: v.tolist() for k, v in auto_hm.items()},
        "auto_chosen": auto_chosen,
    }
    if beside:
        saved["beside"] = beside
    if lead_rules:
        saved["lead_rules"], saved["lead_hm"] = lead_rules, {k: v.tolist() for k, v in lead_hm.items()}
    (out_dir / "early_validation.json").write_text(json.dumps(saved))
    print(path.read_text())


if __name__ == "__main__":
    main()
