"""Figures of the documentation: the error of Aaren implementations against a float64 reference.

Run from the repository root::

    python docs/scripts/make_figures.py

It writes ``docs/_static/aaren_error_vs_magnitude.png`` and ``docs/_static/aaren_error_vs_magnitude.md``
(the numbers behind the plot). Scores are ``s = scale * z`` with ``z`` standard normal, values are
standard normal; for every score scale it reports the relative error

    max_k ||o_k - r_k||_inf / max_k ||r_k||_inf

of float32 outputs ``o`` against the float64 brute-force softmax ``r`` (worst of several seeds), or
"NaN/inf" when an output is not finite.

Two correct paths of this package are measured (:func:`aaren_ts.nn.functional.aaren_attention` and a
loop of :func:`aaren_ts.nn.functional.aaren_step`) next to four implementations that are known to be
wrong. The wrong ones are written out below, **only for this figure**; they are not part of the
package and must not be used.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch

from aaren_ts.nn.functional import AarenState, aaren_attention, aaren_step

STATIC = Path(__file__).resolve().parent.parent / "_static"


# ----------------------------------------------------------------------------- reference (float64)
def reference(s: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Brute-force prefix softmax attention in float64: ``o_k = softmax(s[:k+1]) @ v[:k+1]``."""
    s, v = s.double(), v.double()
    n = s.shape[-1]
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    logits = s.unsqueeze(-2).expand(*s.shape[:-1], n, n).masked_fill(~causal, float("-inf"))
    return torch.softmax(logits, dim=-1) @ v


# ----------------------------------------------------------------------------- correct (this package)
def package_parallel(s: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``aaren_attention`` in float32 (chunked exact scan, float64 log-normalisers)."""
    return aaren_attention(s, v)


def package_step(s: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """A loop of ``aaren_step`` in float32 inputs (float64 state, the default)."""
    state = AarenState.initial(s.shape[:-1], v.shape[-1])
    outs = []
    for s_t, v_t in zip(s.unbind(-1), v.unbind(-2), strict=True):
        o_t, state = aaren_step(state, s_t, v_t)
        outs.append(o_t)
    return torch.stack(outs, dim=-2)


# ----------------------------------------------------------------------------- WRONG: for the figure only
def wrong_m0_zero(s: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """WRONG. The paper's recurrence started from ``m_0 = 0`` instead of ``-inf`` (float32)."""
    m = torch.zeros(s.shape[:-1])
    c = torch.zeros(s.shape[:-1])
    a = torch.zeros(*s.shape[:-1], v.shape[-1])
    outs = []
    for s_t, v_t in zip(s.unbind(-1), v.unbind(-2), strict=True):
        m_new = torch.maximum(m, s_t)
        decay = torch.exp(m - m_new)
        w = torch.exp(s_t - m_new)
        c = c * decay + w
        a = a * decay.unsqueeze(-1) + w.unsqueeze(-1) * v_t
        m = m_new
        outs.append(a / c.unsqueeze(-1))
    return torch.stack(outs, dim=-2)


def wrong_cummax_terms(s: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """WRONG. Each term normalised by its *own* running max, ``exp(s_i - cummax(s)_i)``, then cumsum."""
    w = torch.exp(s - torch.cummax(s, dim=-1).values)
    return torch.cumsum(w.unsqueeze(-1) * v, dim=-2) / torch.cumsum(w, dim=-1).unsqueeze(-1)


def wrong_global_max(s: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """WRONG. ``exp(s - max(s))`` with the global max, then cumsum: prefixes far below it underflow."""
    w = torch.exp(s - s.amax(dim=-1, keepdim=True))
    return torch.cumsum(w.unsqueeze(-1) * v, dim=-2) / torch.cumsum(w, dim=-1).unsqueeze(-1)


def wrong_float32_lse(s: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """WRONG for large |s|. Running log-normaliser carried in float32: ``exp(s_i - lse_k)`` loses
    ``|s| * 2**-24`` of absolute precision in the exponent."""
    lse = torch.logcumsumexp(s, dim=-1)  # float32
    n = s.shape[-1]
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    weights = torch.exp(s.unsqueeze(-2) - lse.unsqueeze(-1)).masked_fill(~causal, 0.0)
    return weights @ v


CORRECT = {
    "aaren_attention (this package)": package_parallel,
    "aaren_step loop (this package)": package_step,
}
WRONG = {
    "WRONG: m_0 = 0": wrong_m0_zero,
    "WRONG: per-term cummax, then cumsum": wrong_cummax_terms,
    "WRONG: global max, then cumsum": wrong_global_max,
    "WRONG: float32 log-sum-exp": wrong_float32_lse,
}


def relative_error(out: torch.Tensor, ref: torch.Tensor) -> float:
    """``max_k ||o_k - r_k||_inf / max_k ||r_k||_inf``; ``inf`` if ``out`` has a NaN or inf."""
    if not bool(torch.isfinite(out).all()):
        return float("inf")
    return float((out.double() - ref).abs().amax() / ref.abs().amax())


def measure(scales: np.ndarray, n: int, dim: int, seeds: int) -> dict[str, list[float]]:
    """Worst relative error over ``seeds`` draws, for every implementation and score scale."""
    errors: dict[str, list[float]] = {name: [] for name in {**CORRECT, **WRONG}}
    for scale in scales:
        worst = dict.fromkeys(errors, 0.0)
        for seed in range(seeds):
            gen = torch.Generator().manual_seed(seed)
            z = torch.randn(4, n, generator=gen, dtype=torch.float64)
            v = torch.randn(4, n, dim, generator=gen, dtype=torch.float64)
            s32, v32 = (scale * z).float(), v.float()
            # The reference sees the float32-rounded inputs: only the computation's error is measured.
            ref = reference(s32, v32)
            for name, fn in {**CORRECT, **WRONG}.items():
                with torch.no_grad():
                    worst[name] = max(worst[name], relative_error(fn(s32, v32), ref))
        for name in errors:
            errors[name].append(worst[name])
    return errors


def plot(scales: np.ndarray, errors: dict[str, list[float]], path: Path, n: int) -> None:
    """Log-log plot of relative error vs score scale; non-finite outputs drawn on a top band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ceiling = 1e3
    fig, ax = plt.subplots(figsize=(7.5, 5.6), dpi=110)
    styles = {
        "aaren_attention (this package)": dict(color="tab:green", marker="o", lw=2.2),
        "aaren_step loop (this package)": dict(color="tab:olive", marker="s", lw=1.4, ls="--"),
        "WRONG: m_0 = 0": dict(color="tab:red", marker="v"),
        "WRONG: per-term cummax, then cumsum": dict(color="tab:purple", marker="^"),
        "WRONG: global max, then cumsum": dict(color="tab:orange", marker="D"),
        "WRONG: float32 log-sum-exp": dict(color="tab:blue", marker="x"),
    }
    for name, errs in errors.items():
        y = np.array([e if np.isfinite(e) else ceiling for e in errs])
        y = np.maximum(y, 1e-9)  # an exact 0 would vanish on a log axis
        ax.plot(scales, y, label=name, ms=5, **styles[name])
    ax.axhspan(ceiling / 2, ceiling * 2, color="0.9", zorder=0)
    ax.text(scales[0], ceiling * 1.25, "NaN / inf output", fontsize=8, va="bottom")
    ax.axhline(1e-5, color="0.4", lw=0.8, ls=":")
    ax.text(scales[-1], 1.3e-5, "1e-5", fontsize=8, ha="right")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_ylim(1e-9, ceiling * 3)
    ax.set_xlabel("score scale |s| (scores = scale × standard normal)")
    ax.set_ylabel("relative error vs float64 reference")
    title = f"Aaren outputs in float32, N = {n} tokens: correct vs known-wrong implementations"
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def table(scales: np.ndarray, errors: dict[str, list[float]]) -> str:
    """Markdown table of the errors (``NaN/inf`` for non-finite outputs)."""
    header = "| implementation | " + " | ".join(f"{s:.0e}" for s in scales) + " |"
    lines = [header, "|---|" + "---|" * len(scales)]
    for name, errs in errors.items():
        cells = ["NaN/inf" if not np.isfinite(e) else f"{e:.1e}" for e in errs]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1024, help="tokens per sequence")
    parser.add_argument("--dim", type=int, default=16, help="value dimension")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=STATIC, help="output folder")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    scales = np.logspace(-3, 4, 15)
    errors = measure(scales, args.n, args.dim, args.seeds)
    args.out.mkdir(parents=True, exist_ok=True)
    plot(scales, errors, args.out / "aaren_error_vs_magnitude.png", args.n)
    text = (
        f"Relative error (worst of {args.seeds} seeds, batch 4, N={args.n}, D={args.dim}) by score scale; "
        "regenerate with `python docs/scripts/make_figures.py`.\n\n" + table(scales, errors) + "\n"
    )
    (args.out / "aaren_error_vs_magnitude.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
