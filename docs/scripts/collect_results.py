"""Copy the benchmark results into the documentation.

The benchmark scripts (``benchmarks/attention_op.py``, ``benchmarks/streaming.py``,
``benchmarks/classification.py``, ``benchmarks/forecasting.py``) write Markdown tables and PNG plots
into ``benchmarks/results/``, which git ignores. The results page of the documentation includes the
committed copies in ``docs/_static/results/``. After re-running a benchmark, run from the repository
root::

    python docs/scripts/collect_results.py

and commit ``docs/_static/results/``. Only ``.md`` and ``.png`` files are copied; a file missing from
``benchmarks/results/`` leaves the committed copy as it is (``--prune`` removes such copies).
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "benchmarks" / "results"
TARGET = ROOT / "docs" / "_static" / "results"
SUFFIXES = (".md", ".png")


def collect(source: Path = SOURCE, target: Path = TARGET, prune: bool = False) -> list[Path]:
    """Copy ``*.md`` and ``*.png`` from ``source`` to ``target``; return the copied files.

    Parameters
    ----------
    source : Path
        The benchmarks' result folder.
    target : Path
        The documentation's copy.
    prune : bool, default=False
        Also delete files in ``target`` that ``source`` no longer has.

    Returns
    -------
    list of Path
        The files written into ``target``.
    """
    target.mkdir(parents=True, exist_ok=True)
    found = []
    if source.is_dir():
        found = sorted(p for p in source.glob("*") if p.is_file() and p.suffix in SUFFIXES)
    copied = []
    for path in found:
        dest = target / path.name
        shutil.copyfile(path, dest)
        copied.append(dest)
    if prune:
        names = {p.name for p in found}
        for old in target.glob("*"):
            if old.suffix in SUFFIXES and old.name not in names:
                old.unlink()
    return copied


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", type=Path, default=SOURCE)
    parser.add_argument("--target", type=Path, default=TARGET)
    parser.add_argument("--prune", action="store_true", help="delete copies whose source is gone")
    args = parser.parse_args(argv)
    copied = collect(args.source, args.target, args.prune)
    if not copied:
        print(f"nothing to copy: no .md/.png files in {args.source}")
    for path in copied:
        print(f"copied {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")


if __name__ == "__main__":
    main()
