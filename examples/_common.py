"""Settings shared by the examples: reduced setting, output folder, showing plots.

Not an example itself. ``AAREN_TS_EXAMPLES_QUICK=1`` selects the reduced setting;
``AAREN_TS_EXAMPLES_OUTPUT`` overrides the output folder (default ``examples/output``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

QUICK = os.environ.get("AAREN_TS_EXAMPLES_QUICK", "").strip().lower() not in ("", "0", "false", "no")


def output_dir() -> Path:
    """The folder plots are written to (created if missing)."""
    default = Path(__file__).resolve().parent / "output"
    out = Path(os.environ.get("AAREN_TS_EXAMPLES_OUTPUT") or default)
    out.mkdir(parents=True, exist_ok=True)
    return out


def interactive() -> bool:
    """True in a notebook or an interactive interpreter, where ``plt.show()`` makes sense."""
    return "ipykernel" in sys.modules or hasattr(sys, "ps1") or bool(sys.flags.interactive)


def save(fig, name: str) -> Path:
    """Save ``fig`` as ``<output>/<name>.png``; show it only when interactive."""
    import matplotlib.pyplot as plt

    path = output_dir() / f"{name}.png"
    fig.savefig(path, dpi=110, bbox_inches="tight")
    print(f"saved {path}")
    if interactive():
        plt.show()
    plt.close(fig)
    return path
