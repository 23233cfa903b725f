"""Worker of ``benchmarks/early_classification.py``: aeon's early classifiers, run in aeon's own environment.

It imports only numpy and aeon (aeon pins another numpy than this project), reads the data the
benchmark wrote, fits each requested early classifier on one thread and writes, per classifier, the
predicted labels, the number of time points each decision used, aeon's own harmonic mean, accuracy
and earliness (``score``), and the process CPU and wall seconds of fit and predict::

    python _aeon_early.py IN.npz OUT.json --seed 0 --base minirocket --models TEASER

``--base minirocket`` (default) trains, at every classification point, aeon's ``MiniRocketClassifier``
with a logistic regression (for probabilities); ``--base default`` keeps each early classifier's own
default (TEASER: MUSE, ProbabilityThresholdEarlyClassifier: DrCIF; hours on UWave on one thread).

``IN.npz`` holds ``X_train``, ``y_train``, ``X_test``, ``y_test`` (equal-length ``(n, channels, T)``).
"""

from __future__ import annotations

import argparse
import json
import os
import time

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402


def _base(kind: str, seed: int) -> object:
    """The classifier trained at each classification point (``None``: aeon's default)."""
    if kind == "default":  # TEASER: MUSE (WEASEL if univariate); ProbabilityThreshold: DrCIF
        return None
    if kind == "minirocket":  # MiniRocket features, a logistic regression for probabilities
        from aeon.classification.convolution_based import MiniRocketClassifier
        from sklearn.linear_model import LogisticRegression

        return MiniRocketClassifier(estimator=LogisticRegression(max_iter=1000), random_state=seed, n_jobs=1)
    raise ValueError(f"unknown base estimator {kind!r}")


def classification_points(base: str, n_timepoints: int) -> list[int]:
    """The prefix lengths the early classifiers train at, passed to them explicitly: aeon's default
    points (the series length divided by 1 .. 20), without those MiniRocket cannot take (fewer than 9
    time points) when it is the base."""
    points = {max(1, round(n_timepoints / i)) for i in range(1, 21)}
    return sorted(points - set(range(9)) if base == "minirocket" else points)


def _make(name: str, seed: int, base: str, points: list[int]) -> object:
    from aeon.classification.early_classification import TEASER, ProbabilityThresholdEarlyClassifier

    kw = {"estimator": _base(base, seed), "classification_points": points, "random_state": seed, "n_jobs": 1}
    if name == "TEASER":
        return TEASER(**kw)
    if name == "ProbabilityThresholdEarlyClassifier":
        return ProbabilityThresholdEarlyClassifier(**kw)
    raise ValueError(f"unknown aeon early classifier {name!r}")


def run(path_in: str, path_out: str, seed: int, models: list[str], base: str = "minirocket") -> None:
    import aeon

    data = np.load(path_in, allow_pickle=False)
    X_train, y_train = data["X_train"].astype(np.float64), data["y_train"]
    X_test, y_test = data["X_test"].astype(np.float64), data["y_test"]
    out: dict[str, object] = {"aeon_version": aeon.__version__, "numpy_version": np.__version__, "models": {}}
    for name in models:
        points = classification_points(base, X_train.shape[2])
        clf = _make(name, seed, base, points)
        cpu, wall = time.process_time(), time.perf_counter()
        clf.fit(X_train, y_train)
        fit_cpu, fit_wall = time.process_time() - cpu, time.perf_counter() - wall
        cpu, wall = time.process_time(), time.perf_counter()
        labels, decisions = clf.predict(X_test)
        predict_cpu, predict_wall = time.process_time() - cpu, time.perf_counter() - wall
        state = clf.get_state_info()
        decided_at = [int(points[int(row[0])]) for row in state]
        harmonic_mean, accuracy, earliness = clf.score(X_test, y_test)
        # accuracy of the classifier trained at each classification point, on the test prefixes
        prefix_accuracy = [
            [int(p), float(np.mean(est.predict(X_test[:, :, : int(p)]) == y_test))]
            for p, est in zip(points, clf.estimators_, strict=True)
        ]
        out["models"][name] = {
            "labels": [str(v) for v in labels],
            "decided": [bool(v) for v in decisions],
            "decided_at": decided_at,
            "harmonic_mean": float(harmonic_mean),
            "accuracy": float(accuracy),
            "earliness": float(earliness),
            "fit_cpu_s": fit_cpu,
            "fit_wall_s": fit_wall,
            "predict_cpu_s": predict_cpu,
            "predict_wall_s": predict_wall,
            "prefix_accuracy": prefix_accuracy,
            "base": base,
            "params": {k: repr(v) for k, v in clf.get_params(deep=False).items()},
        }
        print(
            f"{name}: hm={harmonic_mean:.4f} acc={accuracy:.4f} earliness={earliness:.4f} "
            f"fit={fit_cpu:.1f} CPU s",
            flush=True,
        )
    with open(path_out, "w") as f:
        json.dump(out, f)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path_in")
    parser.add_argument("path_out")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--models", nargs="+", default=["TEASER", "ProbabilityThresholdEarlyClassifier"])
    parser.add_argument("--base", default="minirocket", choices=["minirocket", "default"])
    args = parser.parse_args()
    run(args.path_in, args.path_out, args.seed, args.models, args.base)


if __name__ == "__main__":
    main()
