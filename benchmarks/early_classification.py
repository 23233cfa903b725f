"""Early classification: AarenClassifier.predict_early against aeon's TEASER and ProbabilityThreshold.

An early classifier answers before a series ends; it is scored by accuracy, earliness (the mean
fraction of each test series seen when the answer is given) and their harmonic mean
``2 * accuracy * (1 - earliness) / (accuracy + 1 - earliness)``, as aeon defines them.

For each dataset and seed, in the same run, on the archive's TRAIN/TEST split or, with
``--resample``, seed ``s`` on its resample ``s`` (TRAIN and TEST pooled and redrawn with TRAIN's
class counts, resample 0 the archive's split; BasicMotions' 40 test series make one answer 2.5
points of accuracy, so one split ranks early classifiers by chance):

* ``AarenClassifier`` trained with the loss on every prefix (``--prefix-weight``) answers with
  :meth:`~aaren_ts.AarenClassifier.predict_early` (its probabilities are updated after every time
  point, O(1) each). The test series are also fed through ``partial_update`` one time point at a
  time, and the streamed decisions and probabilities are checked against the batch ones. Its accuracy
  after 10 / 25 / 50 / 100 % of each test series is reported beside them.
* aeon's ``TEASER`` and ``ProbabilityThresholdEarlyClassifier`` train one classifier per
  classification point (the series length divided by 1 .. 20): by default aeon's
  ``MiniRocketClassifier`` with a logistic regression (``--aeon-base default`` keeps their own
  defaults, MUSE and DrCIF: hours on UWave on one thread). aeon pins another numpy than this project,
  so they run in an environment of their own, as a subprocess, and report through files::

      python3 -m venv venv-aeon && venv-aeon/bin/pip install aeon
      python benchmarks/early_classification.py --aeon-python venv-aeon/bin/python

  (or set ``AAREN_TS_AEON_PYTHON``). Without it the aeon rows are skipped, saying why. aeon's early
  classifiers need equal-length series: unequal-length datasets run without them.

Every contender runs on one thread; process CPU seconds are reported beside wall seconds. Writes
``benchmarks/results/early_classification.md`` and ``early_classification.png`` (accuracy against the
fraction of the series seen)::

    python benchmarks/early_classification.py --aeon-python venv-aeon/bin/python \\
        --datasets UWaveGestureLibrary BasicMotions --seeds 0

Real data are read from ``--data-home`` (default ``$AAREN_TS_DATA``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import markdown_table, paired_differences, resample_split, results_dir

from aaren_ts.engine.early import harmonic_mean

FRACTIONS = (0.1, 0.25, 0.5, 1.0)
AEON_MODELS = ("TEASER", "ProbabilityThresholdEarlyClassifier")
WORKER = Path(__file__).resolve().parent / "_aeon_early.py"
#: The classifier settings of the benchmark: the loss on every prefix, the multi-scale stem, and one
#: network: the ensemble of two (the default, chosen for whole-series accuracy) gave early answers no
#: better on validation cut from the training sets (``early_validation.py``, 3-fold, seeds 0, 1, 2,
#: the default rule: harmonic mean 0.755 / 0.883 / 0.908 on UWave / BasicMotions / JapaneseVowels with
#: one network, 0.757 / 0.870 / 0.905 with two).
AAREN_PARAMS = {"dilations": (1, 2, 4, 8, 16, 32), "kernel_size": 9, "n_estimators": 1}


def _load(
    name: str, data_home: str | None
) -> tuple[list[np.ndarray], np.ndarray, list[np.ndarray], np.ndarray]:
    from aaren_ts.datasets import load_uea

    kw = {"data_home": data_home, "download_if_missing": False, "return_type": "list"}
    X_train, y_train = load_uea(name, "train", **kw)
    X_test, y_test = load_uea(name, "test", **kw)
    return X_train, np.asarray(y_train), X_test, np.asarray(y_test)


def _accuracy_at(
    classes: np.ndarray, staged: np.ndarray, lengths: np.ndarray, f: float, y: np.ndarray
) -> float:
    """Accuracy of the probabilities ``staged`` ``(n, T, classes)`` after ``ceil(f * length)`` steps."""
    pos = np.maximum(np.ceil(f * lengths).astype(int), 1) - 1
    return float(np.mean(classes[staged[np.arange(len(lengths)), pos].argmax(-1)] == y))


def run_aaren(
    X_train: list, y_train: np.ndarray, X_test: list, y_test: np.ndarray, seed: int, prefix_weight: float
) -> dict:
    """Fit, answer early in batch and in streams (one time point at a time), accuracy per fraction."""
    from aaren_ts import AarenClassifier

    clf = AarenClassifier(prefix_weight=prefix_weight, random_state=seed, num_threads=1, **AAREN_PARAMS)
    cpu, wall = time.process_time(), time.perf_counter()
    clf.fit(X_train, y_train)
    fit_cpu, fit_wall = time.process_time() - cpu, time.perf_counter() - wall
    lengths = np.array([x.shape[1] for x in X_test])
    cpu, wall = time.process_time(), time.perf_counter()
    labels, decided_at = clf.predict_early(X_test)
    predict_cpu, predict_wall = time.process_time() - cpu, time.perf_counter() - wall
    staged = np.stack(list(clf.staged_predict_proba(X_test)), axis=1)  # (n, T, classes)
    # the same series streamed one time point at a time (all streams at once)
    clf.reset_stream()
    streamed = np.empty_like(staged)
    step_s = []
    for t in range(int(lengths.max())):
        chunk = [x[:, t : t + 1] for x in X_test]
        start = time.perf_counter()
        clf.partial_update(chunk)
        step_s.append(time.perf_counter() - start)
        streamed[:, t] = clf.predict_proba()
    stream_labels, stream_at = clf.predict_early()
    undecided = stream_at == 0
    stream_at[undecided] = lengths[undecided]  # never confident: decided at the end, as in batch
    real = np.arange(staged.shape[1])[None, :] < lengths[:, None]
    exact = {
        "max |streamed - batch| probability": float(np.abs(streamed - staged)[real].max()),
        "streamed decisions equal batch": bool(
            (stream_at == decided_at).all() and (stream_labels == labels).all()
        ),
        "stream step, all test series (ms)": 1e3 * float(np.median(step_s)),
    }
    by_fraction = {f: _accuracy_at(clf.classes_, streamed, lengths, f, y_test) for f in FRACTIONS}
    curve_f = np.linspace(0.02, 1.0, 50)
    curve = [_accuracy_at(clf.classes_, staged, lengths, f, y_test) for f in curve_f]
    sweep = []
    for threshold in (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99):
        lab, at = clf.predict_early(X_test, probability_threshold=threshold)
        acc, earl = float(np.mean(lab == y_test)), float(np.mean(at / lengths))
        sweep.append((threshold, acc, earl, harmonic_mean(acc, earl)))
    accuracy = float(np.mean(labels == y_test))
    earliness = float(np.mean(decided_at / lengths))
    return {
        "accuracy": accuracy,
        "earliness": earliness,
        "harmonic_mean": harmonic_mean(accuracy, earliness),
        "fit_cpu_s": fit_cpu,
        "fit_wall_s": fit_wall,
        "predict_cpu_s": predict_cpu,
        "predict_wall_s": predict_wall,
        "by_fraction": by_fraction,
        "curve": (curve_f.tolist(), curve),
        "sweep": sweep,
        "exact": exact,
        "threshold": float(clf.probability_threshold_),
        "threshold_param": clf.probability_threshold,
    }


def run_aeon(aeon_python: str, data: tuple, seed: int, base: str) -> dict:
    """aeon's early classifiers in their own environment, through files (``data``: the four arrays)."""
    X_train, y_train, X_test, y_test = data
    with tempfile.TemporaryDirectory() as tmp:
        path_in, path_out = Path(tmp) / "data.npz", Path(tmp) / "out.json"
        np.savez(
            path_in,
            X_train=np.stack(X_train),
            y_train=y_train.astype(str),
            X_test=np.stack(X_test),
            y_test=y_test.astype(str),
        )
        command = [aeon_python, str(WORKER), str(path_in), str(path_out), "--seed", str(seed), "--base", base]
        subprocess.run(command, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
        return json.loads(path_out.read_text())


def _threshold(ours: dict) -> str:
    """The classifier's threshold as set, and as chosen at fit where it was ``"auto"``."""
    given = ours.get("threshold_param", ours["threshold"])
    return f"auto: {ours['threshold']}" if given == "auto" else str(ours["threshold"])


def _fmt(value: float) -> str:
    return f"{value:.3f}"


def _over_seeds(results: list[dict]) -> list[str]:
    """The report's first table: each contender's accuracy, earliness and HM, mean ± sd over the seeds
    of each dataset, with the seeds' HMs (empty when every dataset ran one seed)."""
    by_dataset: dict[str, list[dict]] = {}
    for res in results:
        by_dataset.setdefault(res["dataset"], []).append(res)
    if all(len(runs) < 2 for runs in by_dataset.values()):
        return []

    def cell(values: list[float]) -> str:
        return f"{np.mean(values):.3f} ± {np.std(values):.3f}"

    rows = []
    for dataset, runs in by_dataset.items():
        contenders = {"AarenClassifier.predict_early": [r["aaren"] for r in runs]}
        for name in runs[0].get("aeon", {}).get("models", {}):
            contenders[f"aeon {name}"] = [r["aeon"]["models"][name] for r in runs]
        for name, scores in contenders.items():
            hms = [s["harmonic_mean"] for s in scores]
            rows.append(
                [
                    dataset,
                    name,
                    cell([s["accuracy"] for s in scores]),
                    cell([s["earliness"] for s in scores]),
                    cell(hms),
                    " / ".join(_fmt(h) for h in hms),
                    f"{np.mean([s['fit_cpu_s'] for s in scores]):.1f}",
                ]
            )
    seeds = sorted({r["seed"] for r in results})
    header = ["dataset", "model", "accuracy", "earliness", "HM", "HM by seed", "fit CPU s"]
    return [
        f"## Over seeds {', '.join(map(str, seeds))} (mean ± sd)",
        "",
        markdown_table(header, rows),
        "",
    ]


def _paired(results: list[dict]) -> list[str]:
    """The HM of ``predict_early`` minus each aeon classifier's, paired by seed (two seeds or more)."""
    ours = "AarenClassifier.predict_early"
    rows = [[r["dataset"], ours, r["seed"], r["aaren"]["harmonic_mean"]] for r in results]
    rows += [
        [r["dataset"], name, r["seed"], peer["harmonic_mean"]]
        for r in results
        for name, peer in r.get("aeon", {}).get("models", {}).items()
    ]
    table = [
        [
            name,
            f"aeon {model}",
            f"{d['mean']:+.3f} ± {d['se']:.3f}",
            d["n"],
            f"{d['wins']} / {d['ties']} / {d['losses']}",
        ]
        for model in AEON_MODELS
        for name, d in paired_differences(rows, model, ours).items()
    ]
    if not table:
        return []
    return [
        "## predict_early against each aeon classifier, paired by seed",
        "",
        "The harmonic mean of `predict_early` minus the peer's on the same split, the mean over seeds ± "
        "its standard error, and the seeds on which `predict_early`'s was higher / equal / lower.",
        "",
        markdown_table(["dataset", "peer", "HM difference", "seeds", "higher / equal / lower"], table),
        "",
    ]


def write_report(results: list[dict], notes: list[str], command: str, out_dir: Path) -> Path:
    lines = [
        "# Early classification: AarenClassifier.predict_early vs aeon's early classifiers",
        "",
        f"Command: `{command}`",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPU(s), torch {torch.__version__}, one thread per "
        "contender. Accuracy and earliness as aeon defines them (earliness: mean fraction of each test "
        "series seen when the answer is given); HM: their harmonic mean (higher is better). CPU: process "
        "CPU seconds. AarenClassifier's settings (the prefix loss, the dilated stem) and its default "
        "probability_threshold were chosen on validation data held out from the training sets, not on "
        "these test sets. "
        + (
            "Seed s is scored on resample s of TRAIN+TEST (TRAIN's class counts; 0: the archive's split)."
            if any(r.get("resample") for r in results)
            else "Every seed is scored on the archive's TRAIN/TEST split."
        ),
        "",
        *_over_seeds(results),
        *_paired(results),
    ]
    for res in results:
        split = f", resample {res['seed']}" if res.get("resample") else ""
        lines += [f"## {res['dataset']} (seed {res['seed']}{split})", ""]
        ours = res["aaren"]
        rows = [
            [
                f"AarenClassifier.predict_early (prefix_weight={res['prefix_weight']}, "
                f"dilations={AAREN_PARAMS['dilations']}, kernel_size={AAREN_PARAMS['kernel_size']}, "
                f"probability_threshold={_threshold(ours)})",
                _fmt(ours["accuracy"]),
                _fmt(ours["earliness"]),
                _fmt(ours["harmonic_mean"]),
                f"{ours['fit_cpu_s']:.1f}",
                f"{ours['predict_cpu_s']:.2f}",
            ]
        ]
        for name, peer in res.get("aeon", {}).get("models", {}).items():
            rows.append(
                [
                    f"aeon {name} ({peer['base']})",
                    _fmt(peer["accuracy"]),
                    _fmt(peer["earliness"]),
                    _fmt(peer["harmonic_mean"]),
                    f"{peer['fit_cpu_s']:.1f}",
                    f"{peer['predict_cpu_s']:.2f}",
                ]
            )
        best = max(range(len(rows)), key=lambda i: float(rows[i][3]))
        rows[best][3] = f"**{rows[best][3]}**"  # the best harmonic mean
        lines += [
            markdown_table(["model", "accuracy", "earliness", "HM", "fit CPU s", "predict CPU s"], rows),
            "",
            "Accuracy of the streamed AarenClassifier after a fraction of each test series (the "
            "probabilities after that many time points, fed one at a time through `partial_update`):",
            "",
            markdown_table(
                ["fraction seen", *[f"{int(f * 100)} %" for f in FRACTIONS]],
                [["accuracy", *[_fmt(ours["by_fraction"][f]) for f in FRACTIONS]]],
            ),
            "",
            "Streamed against batch: the largest difference of a probability "
            f"{ours['exact']['max |streamed - batch| probability']:.1e}; the same decisions: "
            f"{ours['exact']['streamed decisions equal batch']}; one `partial_update` step of all "
            f"test series at once: {ours['exact']['stream step, all test series (ms)']:.2f} ms (median).",
            "",
            "The confidence threshold trades accuracy for earliness (this sweep reads the test set; it "
            "is shown, not used to choose the threshold above):",
            "",
            markdown_table(
                ["probability_threshold", "accuracy", "earliness", "HM"],
                [[t, _fmt(a), _fmt(e), _fmt(h)] for t, a, e, h in ours["sweep"]],
            ),
            "",
        ]
        peers = res.get("aeon", {}).get("models", {})
        if "ProbabilityThresholdEarlyClassifier" in peers:
            points = peers["ProbabilityThresholdEarlyClassifier"]["prefix_accuracy"]
            lines += [
                "Accuracy of the classifier aeon trained on each prefix length (one model per "
                "classification point), on the test prefixes of that length:",
                "",
                markdown_table(
                    ["time points", *[str(p) for p, _ in points]],
                    [["accuracy", *[f"{a:.2f}" for _, a in points]]],
                ),
                "",
            ]
    if notes:
        lines += ["## Notes", "", *[f"- {n}" for n in notes], ""]
    path = out_dir / "early_classification.md"
    path.write_text("\n".join(lines))
    return path


def plot(results: list[dict], out_dir: Path) -> Path | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    first_seed: dict[str, dict] = {}
    for res in results:  # one panel per dataset: its first seed's run
        first_seed.setdefault(res["dataset"], res)
    results = list(first_seed.values())
    fig, axes = plt.subplots(1, len(results), figsize=(5.5 * len(results), 4.2), squeeze=False)
    for ax, res in zip(axes[0], results, strict=True):
        ours = res["aaren"]
        xs, ys = ours["curve"]
        ax.plot(xs, ys, color="C0", label="AarenClassifier, streamed (one model)")
        ax.scatter(
            [ours["earliness"]],
            [ours["accuracy"]],
            color="C0",
            marker="*",
            s=160,
            zorder=3,
            label="predict_early",
        )
        peers = res.get("aeon", {}).get("models", {})
        if "ProbabilityThresholdEarlyClassifier" in peers:
            points = peers["ProbabilityThresholdEarlyClassifier"]["prefix_accuracy"]
            n = res["n_timepoints"]
            ax.plot(
                [p / n for p, _ in points],
                [a for _, a in points],
                "o--",
                color="C1",
                ms=3,
                label="MiniRocket trained on each prefix (aeon)",
            )
        for k, (name, peer) in enumerate(peers.items()):
            ax.scatter(
                [peer["earliness"]], [peer["accuracy"]], marker="D", color=f"C{k + 2}", zorder=3, label=name
            )
        ax.set_title(f"{res['dataset']} (seed {res['seed']})")
        ax.set_xlabel("fraction of each test series seen")
        ax.set_ylabel("accuracy")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    path = out_dir / "early_classification.png"
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["UWaveGestureLibrary", "BasicMotions"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--data-home", default=None)
    parser.add_argument("--aeon-python", default=os.environ.get("AAREN_TS_AEON_PYTHON"))
    parser.add_argument("--aeon-base", default="minirocket", choices=["minirocket", "default"])
    parser.add_argument("--prefix-weight", type=float, default=0.5)
    parser.add_argument(
        "--resample",
        action="store_true",
        help="seed s on resample s of TRAIN+TEST (TRAIN's class counts; 0: the archive's split)",
    )
    parser.add_argument("--out", default=None, help="results folder (default benchmarks/results)")
    parser.add_argument(
        "--from-json", default=None, help="only write the report and plot again from a run's saved JSON"
    )
    args = parser.parse_args()
    if args.from_json:
        saved = json.loads(Path(args.from_json).read_text())
        for res in saved["results"]:  # JSON keys are strings
            res["aaren"]["by_fraction"] = {float(k): v for k, v in res["aaren"]["by_fraction"].items()}
        out_dir = results_dir(args.out)
        print(write_report(saved["results"], saved["notes"], saved["command"], out_dir))
        print(plot(saved["results"], out_dir))
        return
    torch.set_num_threads(1)
    notes: list[str] = []
    if not args.aeon_python:
        notes.append("aeon's early classifiers skipped: no --aeon-python (or AAREN_TS_AEON_PYTHON) given")
    results = []
    for name in args.datasets:
        archive = _load(name, args.data_home)
        equal = len({x.shape[1] for x in [*archive[0], *archive[2]]}) == 1
        for seed in args.seeds:
            X_train, y_train, X_test, y_test = resample_split(*archive, seed) if args.resample else archive
            res = {
                "dataset": name,
                "seed": seed,
                "prefix_weight": args.prefix_weight,
                "resample": args.resample,
            }
            res["n_timepoints"] = max(x.shape[1] for x in X_test)
            res["aaren"] = run_aaren(X_train, y_train, X_test, y_test, seed, args.prefix_weight)
            ours = res["aaren"]
            print(
                f"{name} seed={seed} AarenClassifier: hm={ours['harmonic_mean']:.3f} "
                f"acc={ours['accuracy']:.3f} earliness={ours['earliness']:.3f} "
                f"by fraction={ours['by_fraction']} fit={ours['fit_cpu_s']:.1f} CPU s",
                flush=True,
            )
            if args.aeon_python and equal:
                data = (X_train, y_train, X_test, y_test)
                res["aeon"] = run_aeon(args.aeon_python, data, seed, args.aeon_base)
            elif args.aeon_python:
                notes.append(f"{name}: aeon's early classifiers skipped (they need equal-length series)")
            results.append(res)
    out_dir = results_dir(args.out)
    words = ["python", "benchmarks/early_classification.py", *sys.argv[1:]]
    for i, word in enumerate(words[:-1]):  # no machine paths in the report
        if word in ("--aeon-python", "--data-home", "--out"):
            words[i + 1] = {"--aeon-python": "$AEON_PYTHON", "--data-home": "$AAREN_TS_DATA"}.get(word, "OUT")
    args_text = " ".join(words)
    print(write_report(results, notes, args_text, out_dir))
    print(plot(results, out_dir))
    saved = {"results": results, "notes": notes, "command": args_text}
    (out_dir / "early_classification.json").write_text(json.dumps(saved, default=str))


if __name__ == "__main__":
    main()
