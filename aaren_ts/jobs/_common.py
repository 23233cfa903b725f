"""What the ``aaren-ts`` jobs share: their common options, defined once, and the estimator settings.

Every job takes ``--dataset``, ``--data-home``, ``--random-state``, ``--device``, ``--threads``,
``--max-epochs``, ``--backbone``, ``--param``, ``--verbose``/``--quiet`` and ``--no-download``; a job
that writes files also takes ``--output``.
"""

from __future__ import annotations

import argparse
import ast
import json
from typing import Any

__all__ = ["add_common_arguments", "estimator_options", "parse_param"]

#: Estimator parameters the jobs set from options of their own (not through ``--param``).
_OWN_OPTIONS = {
    "backbone": "--backbone",
    "device": "--device",
    "horizon": "--horizon",
    "max_epochs": "--max-epochs",
    "num_threads": "--threads",
    "random_state": "--random-state",
    "verbose": "--verbose or --quiet",
}


def parse_param(text: str) -> tuple[str, Any]:
    """``NAME=VALUE`` of a ``--param`` option as ``(NAME, value)``.

    The value is read as JSON where it parses (``5``, ``0.1``, ``null``, ``true``, ``["mse", "mae"]``),
    else as a Python literal (``None``, ``True``, ``(1, 2)``), else kept as the string itself
    (``combination=theta``).

    Raises
    ------
    argparse.ArgumentTypeError
        If ``text`` has no ``=`` or ``NAME`` is not an identifier (argparse reports it as a usage error).
    """
    name, sep, value = text.partition("=")
    if not sep or not name.isidentifier():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    try:
        return name, json.loads(value)
    except json.JSONDecodeError:
        pass
    try:
        return name, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return name, value


def add_common_arguments(
    parser: argparse.ArgumentParser,
    *,
    dataset: str,
    dataset_help: str,
    max_epochs: int | None = None,
    output: str | None = None,
    output_help: str = "folder for the job's files",
) -> None:
    """Add the options every job takes to ``parser``.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The job's sub-command parser.
    dataset : str
        Default of ``--dataset``.
    dataset_help : str
        What ``--dataset`` accepts.
    max_epochs : int, optional
        Default of ``--max-epochs`` (None: the estimator's default).
    output : str, optional
        Default of ``--output``; None leaves the option out (the job writes no files).
    output_help : str
        What ``--output`` holds.
    """
    parser.add_argument("--dataset", default=dataset, help=f"{dataset_help} (default: %(default)s)")
    parser.add_argument(
        "--data-home",
        default=None,
        metavar="DIR",
        help="data folder, in the upstream layout (default: $AAREN_TS_DATA, else ~/aaren_ts_data)",
    )
    parser.add_argument(
        "--random-state", type=int, default=0, metavar="SEED", help="random_state (default: %(default)s)"
    )
    # the flag's former name in `aaren-ts classify`, still accepted
    parser.add_argument(
        "--seed", dest="random_state", type=int, default=argparse.SUPPRESS, help=argparse.SUPPRESS
    )
    parser.add_argument("--device", default="auto", help="'auto', 'cpu', 'cuda', ... (default: %(default)s)")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        metavar="N",
        help="torch threads for training and prediction (default: 1)",
    )
    epochs_default = "the estimator's default" if max_epochs is None else "%(default)s"
    parser.add_argument(
        "--max-epochs",
        type=int,
        default=max_epochs,
        metavar="N",
        help=f"upper bound on training epochs (default: {epochs_default})",
    )
    parser.add_argument(
        "--backbone",
        choices=["aaren", "transformer"],
        default="aaren",
        help="sequence mixer: Aaren or the causal Transformer baseline (default: %(default)s)",
    )
    parser.add_argument(
        "--param",
        type=parse_param,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="any other estimator parameter, e.g. --param n_estimators=1 (repeatable; the value read as "
        "JSON or a Python literal, else as a string)",
    )
    talk = parser.add_mutually_exclusive_group()
    talk.add_argument(
        "--verbose",
        type=int,
        default=1,
        metavar="LEVEL",
        help="training progress on standard error: 1 one bar for the whole fit (a line per stage where "
        "standard error is not a terminal; the default), 2 also every network's epoch table, 0 nothing",
    )
    talk.add_argument(
        "-q",
        "--quiet",
        dest="verbose",
        action="store_const",
        const=0,
        help="no training progress (--verbose 0)",
    )
    parser.add_argument(
        "--no-download", action="store_true", help="fail instead of downloading a missing dataset"
    )
    if output is not None:
        parser.add_argument(
            "--output", default=output, metavar="DIR", help=f"{output_help} (default: %(default)s)"
        )


def estimator_options(args: argparse.Namespace, estimator: type) -> dict[str, Any]:
    """The parameters of ``estimator`` that the common options set (``max_epochs`` only when given),
    then those of ``--param``.

    Raises
    ------
    SystemExit
        If a ``--param`` names no parameter of ``estimator`` or one that has its own option.
    """
    options: dict[str, Any] = {
        "backbone": args.backbone,
        "random_state": args.random_state,
        "device": args.device,
        "verbose": args.verbose,
        "num_threads": args.threads,
    }
    if args.max_epochs is not None:
        options["max_epochs"] = args.max_epochs
    known = set(estimator.get_param_names())
    for name, value in args.param:
        if name not in known:
            raise SystemExit(
                f"aaren-ts: error: --param {name}: {estimator.__name__} has no such parameter "
                f"(its parameters: {', '.join(sorted(known))})"
            )
        if name in _OWN_OPTIONS:
            raise SystemExit(f"aaren-ts: error: --param {name}: use {_OWN_OPTIONS[name]} instead")
        options[name] = value
    return options
