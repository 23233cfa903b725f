"""``aaren-ts classify``: train AarenClassifier on a UEA dataset and report test accuracy.

The archive's TRAIN split is used for training (early stopping, when enabled, holds out part of TRAIN,
never TEST), TEST for the reported accuracy, printed beside the paper's figure for the dataset.
JapaneseVowels, the default, ships with sktime, so the job runs on a fresh install without downloads.
"""

from __future__ import annotations

import argparse
import time

__all__ = ["PAPER_ACCURACY", "add_arguments", "run"]

#: Aaren's test accuracy (%) in Feng et al. 2024 (mean over 5 seeds).
PAPER_ACCURACY: dict[str, float] = {
    "JapaneseVowels": 96.65,
    "UWaveGestureLibrary": 82.00,
    "Handwriting": 27.39,
    "Heartbeat": 74.15,
    "SelfRegulationSCP1": 89.42,
    "SelfRegulationSCP2": 54.22,
    "EthanolConcentration": 29.58,
    "SpokenArabicDigits": 98.68,
    "FaceDetection": 69.06,
    "PEMS-SF": 81.85,
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``aaren-ts classify``."""
    parser.add_argument("--dataset", default="JapaneseVowels", help="UEA dataset name (default: %(default)s)")
    parser.add_argument(
        "--data-home",
        default=None,
        help="folder holding Multivariate_ts/<NAME>/ (default: $AAREN_TS_DATA, else ~/aaren_ts_data)",
    )
    parser.add_argument("--seed", type=int, default=0, help="random_state (default: %(default)s)")
    parser.add_argument("--max-epochs", type=int, default=None, help="override the default max_epochs")
    parser.add_argument(
        "--backbone",
        choices=["aaren", "transformer"],
        default="aaren",
        help="sequence mixer (default: aaren)",
    )
    parser.add_argument("--device", default="auto", help="'auto', 'cpu', 'cuda', ... (default: auto)")
    parser.add_argument(
        "--threads", type=int, default=1, help="torch threads while training/predicting (default: 1)"
    )
    parser.add_argument("--verbose", type=int, default=0, help="> 0 shows skorch's epoch log")
    parser.add_argument(
        "--no-download", action="store_true", help="fail instead of downloading a missing dataset"
    )


def run(args: argparse.Namespace) -> int:
    """Train, evaluate and print the result; returns the process exit code."""
    from aaren_ts import AarenClassifier
    from aaren_ts.datasets import load_uea

    common = {
        "data_home": args.data_home,
        "return_type": "list",
        "download_if_missing": not args.no_download,
    }
    X_train, y_train = load_uea(args.dataset, "train", **common)
    X_test, y_test = load_uea(args.dataset, "test", **common)

    params = {
        "backbone": args.backbone,
        "random_state": args.seed,
        "device": args.device,
        "num_threads": args.threads,
        "verbose": args.verbose,
    }
    if args.max_epochs is not None:
        params["max_epochs"] = args.max_epochs
    clf = AarenClassifier(**params)

    lengths = [x.shape[1] for x in X_train]
    print(
        f"{args.dataset}: {len(X_train)} train / {len(X_test)} test series, "
        f"{X_train[0].shape[0]} channel(s), length {min(lengths)}-{max(lengths)}, {len(set(y_train))} classes"
    )
    start = time.perf_counter()
    clf.fit(X_train, y_train)
    fit_time = time.perf_counter() - start
    start = time.perf_counter()
    accuracy = 100.0 * clf.score(X_test, y_test)
    predict_time = time.perf_counter() - start

    paper = PAPER_ACCURACY.get(args.dataset)
    paper_text = f"{paper:.2f} %" if paper is not None else "n/a (not in the paper's table)"
    print(f"backbone={args.backbone} seed={args.seed} epochs run={len(clf.net_.history)}")
    print(f"test accuracy : {accuracy:.2f} %   (paper, Aaren: {paper_text})")
    print(f"fit time      : {fit_time:.1f} s")
    print(f"predict time  : {predict_time:.2f} s for {len(X_test)} series")
    return 0
