"""The ``aaren-ts`` console command: ``aaren-ts classify`` and ``aaren-ts forecast``.

Both jobs take the same common options (``aaren_ts/jobs/_common.py``): ``--dataset``, ``--data-home``,
``--random-state``, ``--device``, ``--threads``, ``--max-epochs``, ``--backbone``, ``--verbose``/``--quiet``
and ``--no-download``; training progress is shown unless ``--quiet``. The command keeps freed memory
in its process for reuse (glibc's allocator thresholds, :mod:`aaren_ts.jobs._allocator`).
"""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence

from aaren_ts.jobs._allocator import keep_freed_memory

_DESCRIPTION = """\
Aaren (attention as an RNN) for time series: train and evaluate an estimator on a benchmark dataset.

Both jobs take the same common options (--dataset, --data-home, --random-state, --device, --threads,
--max-epochs, --backbone, --verbose/--quiet, --no-download); training progress is shown unless --quiet.
Run 'aaren-ts JOB --help' for a job's options."""

# Each job module defines ``add_arguments(parser)`` and ``run(args) -> int``.
_JOBS = {
    "classify": ("aaren_ts.jobs.classify", "Train and evaluate AarenClassifier on a UEA dataset."),
    "forecast": ("aaren_ts.jobs.forecast", "Train and evaluate AarenForecaster on a forecasting set."),
}


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``aaren-ts`` with one sub-command per job."""
    parser = argparse.ArgumentParser(
        prog="aaren-ts", description=_DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="job", required=True)
    for name, (module, help_text) in _JOBS.items():
        job_parser = sub.add_parser(name, help=help_text, description=help_text)
        importlib.import_module(module).add_arguments(job_parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``aaren-ts``.

    The command owns its process, so it first keeps freed memory there for reuse
    (:func:`~aaren_ts.jobs._allocator.keep_freed_memory`: glibc's allocator thresholds, which the library
    itself never sets); a ``MALLOC_*`` variable in the environment keeps the user's value.
    """
    keep_freed_memory()
    args = build_parser().parse_args(argv)
    return int(importlib.import_module(_JOBS[args.job][0]).run(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())
