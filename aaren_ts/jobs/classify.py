"""``aaren-ts classify``: train AarenClassifier on a UEA dataset and report test accuracy.

The archive's TRAIN split is used for training (early stopping, when enabled, holds out part of TRAIN,
never TEST), TEST for the reported accuracy, printed beside the paper's figure for the dataset
(:data:`aaren_ts.datasets.reference.PAPER_ACCURACY`). JapaneseVowels, the default, ships with sktime, so
the job runs on a fresh install without downloads.
"""

from __future__ import annotations

import argparse
import time

from ._common import add_common_arguments, estimator_options

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``aaren-ts classify``."""
    add_common_arguments(parser, dataset="JapaneseVowels", dataset_help="UEA dataset name")


def run(args: argparse.Namespace) -> int:
    """Train, evaluate and print the result; returns the process exit code."""
    from aaren_ts import AarenClassifier
    from aaren_ts.datasets import load_uea
    from aaren_ts.datasets.reference import paper_accuracy

    common = {
        "data_home": args.data_home,
        "return_type": "list",
        "download_if_missing": not args.no_download,
    }
    X_train, y_train = load_uea(args.dataset, "train", **common)
    X_test, y_test = load_uea(args.dataset, "test", **common)

    clf = AarenClassifier(**estimator_options(args, AarenClassifier))

    lengths = [x.shape[1] for x in X_train]
    print(
        f"{args.dataset}: {len(X_train)} train / {len(X_test)} test series, "
        f"{X_train[0].shape[0]} channel(s), length {min(lengths)}-{max(lengths)}, "
        f"{len(set(y_train))} classes",
        flush=True,
    )
    start = time.perf_counter()
    clf.fit(X_train, y_train)
    fit_time = time.perf_counter() - start
    start = time.perf_counter()
    accuracy = 100.0 * clf.score(X_test, y_test)
    predict_time = time.perf_counter() - start

    paper = paper_accuracy(args.dataset)
    paper_text = f"{paper:.2f} %" if paper is not None else "n/a (not in the paper's table)"
    print(f"backbone={args.backbone} random_state={args.random_state} epochs run={len(clf.net_.history)}")
    print(f"test accuracy : {accuracy:.2f} %   (paper, Aaren: {paper_text})")
    print(f"fit time      : {fit_time:.1f} s")
    print(f"predict time  : {predict_time:.2f} s for {len(X_test)} series")
    return 0
