"""Generate the dataset cards of this folder from the registry (``aaren_ts/datasets/_registry.py``).

Usage::

    python datasets/make_cards.py          # (re)write README.md and one <name>.md per dataset
    python datasets/make_cards.py --check  # exit 1, listing them, if any card differs from the registry
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from aaren_ts.datasets._cards import render_all, write_all

FOLDER = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    """Write (or with ``--check``, compare) the cards; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 when a card differs")
    args = parser.parse_args(argv)
    if args.check:
        stale = [
            name
            for name, text in render_all().items()
            if not (FOLDER / name).is_file() or (FOLDER / name).read_text(encoding="utf-8") != text
        ]
        for name in stale:
            print(f"out of date: datasets/{name}")
        return 1 if stale else 0
    for name in write_all(FOLDER):
        print(f"wrote datasets/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
