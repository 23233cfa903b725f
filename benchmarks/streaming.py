"""Token-by-token inference: AarenEncoder ``step`` vs a KV-cached causal Transformer (the paper's Fig. 5).

Both encoders have the same sizes. Feeding ``--tokens`` tokens one at a time at batch size 1, it records
the time of each step and the memory of the recurrent state (Aaren) or KV cache (Transformer) as the
history grows, and the time of the same layers' dense projections alone for one token (the floor that
any per-token method pays). It prints same-run ratios and writes ``streaming.png`` (per-token time,
cumulative time and state memory against history length) and ``streaming.md``.

Run ``python benchmarks/streaming.py`` (about a minute); ``--quick`` for a smoke run.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import torch
from _common import markdown_table, results_dir
from torch.nn import functional as F

from aaren_ts.nn import AarenEncoder, CausalTransformerEncoder, fused_step_available
from aaren_ts.nn.blocks import StackedEncoder


def state_nbytes(state: list) -> int:
    """Bytes held by an encoder's per-layer states (Aaren states or KV caches)."""
    total = 0
    for layer_state in state:
        if hasattr(layer_state, "nbytes"):
            total += layer_state.nbytes()
        else:
            total += sum(t.nelement() * t.element_size() for t in layer_state)
    return total


def stream(
    encoder: StackedEncoder, tokens: torch.Tensor, keep: tuple[int, ...] = ()
) -> tuple[np.ndarray, np.ndarray, dict[int, list]]:
    """Per-step seconds and state bytes while feeding ``tokens`` ``(N, d_model)`` one at a time, and
    the states after the histories listed in ``keep``."""
    times = np.empty(len(tokens))
    nbytes = np.empty(len(tokens))
    kept = {}
    with torch.inference_mode():
        state = encoder.init_state(1)
        for _ in range(5):  # warm-up on a throwaway state
            encoder.step(tokens[:1], encoder.init_state(1))
        for i, x_t in enumerate(tokens):
            start = time.perf_counter()
            _, state = encoder.step(x_t.unsqueeze(0), state)
            times[i] = time.perf_counter() - start
            nbytes[i] = state_nbytes(state)
            if i + 1 in keep:
                kept[i + 1] = state
    return times, nbytes, kept


def interleaved_step_times(
    step: Callable, states: dict[int, list], x_t: torch.Tensor, repeats: int = 400
) -> dict[int, float]:
    """Median seconds of one step from each kept state, alternating between them, so that machine
    load drifting during the run affects every history alike (Aaren's states are values: stepping
    from one leaves it unchanged)."""
    samples: dict[int, list[float]] = {h: [] for h in states}
    with torch.inference_mode():
        for _ in range(repeats):
            for history, state in states.items():
                start = time.perf_counter()
                step(x_t, state)
                samples[history].append(time.perf_counter() - start)
    return {h: float(np.median(v)) for h, v in samples.items()}


def dense_floor(encoder: AarenEncoder, repeats: int = 2000) -> float:
    """Seconds per token of the encoder's dense projections alone (score/value, output, two FFN)."""
    d = encoder.d_model
    weights = []
    for layer in encoder.layers:
        weight, bias = layer.mixer._fold_score_value()
        weights += [
            (weight.detach(), bias.detach()),
            (layer.mixer.out.weight, layer.mixer.out.bias),
            (layer.feed_forward.hidden.weight, layer.feed_forward.hidden.bias),
            (layer.feed_forward.output.weight, layer.feed_forward.output.bias),
        ]
    inputs = {w.shape[1]: torch.randn(1, w.shape[1]) for w, _ in weights}
    with torch.inference_mode():
        for _ in range(50):
            for w, b in weights:
                F.linear(inputs[w.shape[1]], w, b)
        best = float("inf")
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(repeats // 5):
                for w, b in weights:
                    F.linear(inputs[w.shape[1]], w, b)
            best = min(best, (time.perf_counter() - start) / (repeats // 5))
    del d
    return best


def window_median(times: np.ndarray, end: int, width: int = 64) -> float:
    """Median step time over the ``width`` steps ending at history ``end``."""
    return float(np.median(times[max(0, end - width) : end]))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tokens", type=int, default=8192)
    parser.add_argument("--d-model", type=int, default=128)
    parser.add_argument("--n-heads", type=int, default=8)
    parser.add_argument("--n-layers", type=int, default=4)
    parser.add_argument("--d-ff", type=int, default=256)
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (1 suits batch 1)")
    parser.add_argument("--quick", action="store_true", help="1024 tokens")
    parser.add_argument("--out", default=None, help="results folder (default benchmarks/results)")
    args = parser.parse_args(argv)
    if args.quick:
        args.tokens = 1024
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    sizes = dict(d_model=args.d_model, n_heads=args.n_heads, n_layers=args.n_layers, d_ff=args.d_ff)
    aaren = AarenEncoder(**sizes).eval()
    transformer = CausalTransformerEncoder(**sizes).eval()
    tokens = torch.randn(args.tokens, args.d_model)

    early, late = 64, args.tokens
    t_aaren, m_aaren, kept = stream(aaren, tokens, keep=(early, late))
    t_tf, m_tf, _ = stream(transformer, tokens)
    floor = dense_floor(aaren)
    # Aaren's per-token time at both histories, measured interleaved in the same period.
    paired = interleaved_step_times(aaren.step, kept, tokens[:1])
    a_early, a_late = paired[early], paired[late]
    fused = fused_step_available()
    # The same step through PyTorch operations only (what runs without the fused C kernel).
    plan = aaren.__dict__["_step_plan"]
    ops_only = interleaved_step_times(plan._step_torch, {late: kept[late]}, tokens[:1], repeats=200)[late]
    tf_early, tf_late = window_median(t_tf, early), window_median(t_tf, late)
    rows = [
        ["Aaren step", f"{a_early * 1e6:.0f}", f"{a_late * 1e6:.0f}", f"{a_late / a_early:.2f}",
         f"{m_aaren[early - 1] / 1024:.1f}", f"{m_aaren[-1] / 1024:.1f}", f"{t_aaren.sum():.2f}"],
        ["Transformer step (KV cache)", f"{tf_early * 1e6:.0f}", f"{tf_late * 1e6:.0f}",
         f"{tf_late / tf_early:.2f}", f"{m_tf[early - 1] / 1024:.1f}", f"{m_tf[-1] / 1024:.1f}",
         f"{t_tf.sum():.2f}"],
    ]
    header = ["", f"µs/token at {early}", f"µs/token at {late}", "late / early",
              f"state KiB at {early}", f"state KiB at {late}", "total s"]
    summary = (
        "Aaren µs/token: median of 400 steps from the states at both histories, interleaved; "
        "Transformer: running median of 64 steps while streaming. "
        f"Dense projections alone: {floor * 1e6:.0f} µs/token; Aaren step / floor = "
        f"{a_early / floor:.2f} (history {early}), {a_late / floor:.2f} (history {late}); fused C step "
        f"{'used' if fused else 'NOT available (no C compiler?)'}. The same step through PyTorch "
        f"operations only: {ops_only * 1e6:.0f} µs/token ({ops_only / floor:.2f}× the floor). "
        f"Transformer / Aaren per token at history {late}: {tf_late / a_late:.2f}."
    )
    title = (f"Streaming, batch 1, d_model={args.d_model}, heads={args.n_heads}, layers={args.n_layers}, "
             f"d_ff={args.d_ff}, {args.threads} thread(s)")
    text = f"### {title}\n\n{markdown_table(header, rows)}\n\n{summary}\n"
    out = results_dir(args.out)
    (out / "streaming.md").write_text(text)
    print(text)
    plot(t_aaren, t_tf, m_aaren, m_tf, out / "streaming.png", title)
    print(f"written to {out / 'streaming.md'} and {out / 'streaming.png'}")


def plot(t_aaren, t_tf, m_aaren, m_tf, path, title) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    history = np.arange(1, len(t_aaren) + 1)
    width = 64

    def smooth(x: np.ndarray) -> np.ndarray:
        return np.array([np.median(x[max(0, i - width) : i + 1]) for i in range(len(x))])

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    axes[0].plot(history, smooth(t_aaren) * 1e6, label="Aaren (state)")
    axes[0].plot(history, smooth(t_tf) * 1e6, label="Transformer (KV cache)")
    axes[0].set(xlabel="tokens seen", ylabel="µs per token (running median)", title="Time per new token")
    axes[1].plot(history, np.cumsum(t_aaren), label="Aaren (state)")
    axes[1].plot(history, np.cumsum(t_tf), label="Transformer (KV cache)")
    axes[1].set(xlabel="tokens seen", ylabel="seconds", title="Cumulative time")
    axes[2].plot(history, m_aaren / 1024, label="Aaren (state)")
    axes[2].plot(history, m_tf / 1024, label="Transformer (KV cache)")
    axes[2].set(xlabel="tokens seen", ylabel="KiB", title="State memory")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
