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


def interleaved_medians(calls: dict[str, Callable[[], object]], repeats: int = 400) -> dict[str, float]:
    """Median seconds of each call, the calls alternating, so that machine load drifting during the run
    affects all of them alike (ratios between them are then meaningful on a busy machine)."""
    samples: dict[str, list[float]] = {name: [] for name in calls}
    with torch.inference_mode():
        for _ in range(20):  # warm-up
            for call in calls.values():
                call()
        for _ in range(repeats):
            for name, call in calls.items():
                start = time.perf_counter()
                call()
                samples[name].append(time.perf_counter() - start)
    return {name: float(np.median(v)) for name, v in samples.items()}


def alternating_best(
    calls: dict[str, Callable[[], object]], block: int = 200, rounds: int = 7
) -> dict[str, float]:
    """Seconds per call of each callable in a hot loop: the best of ``rounds`` blocks of ``block``
    calls, the blocks of the different callables alternating (so each sees the same machine state)."""
    best = {name: float("inf") for name in calls}
    with torch.inference_mode():
        for _ in range(rounds):
            for name, call in calls.items():
                start = time.perf_counter()
                for _ in range(block):
                    call()
                best[name] = min(best[name], (time.perf_counter() - start) / block)
    return best


def dense_projections(encoder: AarenEncoder) -> Callable[[], None]:
    """One token through the encoder's dense projections alone (score/value, output, two FFN): the
    floor that any per-token method pays."""
    weights = []
    for layer in encoder.layers:
        weight, bias = layer.mixer._fold_score_value()
        weights += [
            (weight.detach(), bias.detach()),
            (layer.mixer.out.weight, layer.mixer.out.bias),
            (layer.feed_forward.hidden.weight, layer.feed_forward.hidden.bias),
            (layer.feed_forward.output.weight, layer.feed_forward.output.bias),
        ]
    inputs = [torch.randn(1, w.shape[1]) for w, _ in weights]

    def run() -> None:
        for (w, b), x in zip(weights, inputs, strict=True):
            F.linear(x, w, b)

    return run


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
    fused = fused_step_available()
    x_t = tokens[:1]
    plan = aaren.__dict__["_step_plan"]  # built by the stream; _step_torch = without the fused C kernel
    # Aaren's per-token time at both histories, the floor, and the PyTorch-operations step, interleaved.
    timed = interleaved_medians(
        {"early": lambda: aaren.step(x_t, kept[early]), "late": lambda: aaren.step(x_t, kept[late])}
    )
    a_early, a_late = timed["early"], timed["late"]
    # Step vs the dense projections alone, each in a hot loop (weights in cache: the floor at its best).
    hot = alternating_best(
        {
            "step": lambda: aaren.step(x_t, kept[late]),
            "floor": dense_projections(aaren),
            "ops": lambda: plan._step_torch(x_t, kept[late]),
        }
    )
    floor, ops_only = hot["floor"], hot["ops"]
    tf_early, tf_late = window_median(t_tf, early), window_median(t_tf, late)
    rows = [
        [
            "Aaren step",
            f"{a_early * 1e6:.0f}",
            f"{a_late * 1e6:.0f}",
            f"{a_late / a_early:.2f}",
            f"{m_aaren[early - 1] / 1024:.1f}",
            f"{m_aaren[-1] / 1024:.1f}",
            f"{t_aaren.sum():.2f}",
        ],
        [
            "Transformer step (KV cache)",
            f"{tf_early * 1e6:.0f}",
            f"{tf_late * 1e6:.0f}",
            f"{tf_late / tf_early:.2f}",
            f"{m_tf[early - 1] / 1024:.1f}",
            f"{m_tf[-1] / 1024:.1f}",
            f"{t_tf.sum():.2f}",
        ],
    ]
    header = [
        "",
        f"µs/token at {early}",
        f"µs/token at {late}",
        "late / early",
        f"state KiB at {early}",
        f"state KiB at {late}",
        "total s",
    ]
    summary = (
        "Aaren µs/token: median of 400 steps from the states at both histories, interleaved; "
        "Transformer: running median of 64 steps while streaming. "
        "Hot loops, best of 7 alternating blocks of 200: dense projections alone "
        f"{floor * 1e6:.0f} µs/token, "
        f"Aaren step {hot['step'] * 1e6:.0f} µs/token = {hot['step'] / floor:.2f}× the floor; fused C step "
        f"{'used' if fused else 'NOT available (no C compiler?)'}. The same step through PyTorch "
        f"operations only: {ops_only * 1e6:.0f} µs/token ({ops_only / floor:.2f}× the floor). "
        f"Transformer / Aaren per token at history {late}: {tf_late / a_late:.2f}."
    )
    title = (
        f"Streaming, batch 1, d_model={args.d_model}, heads={args.n_heads}, layers={args.n_layers}, "
        f"d_ff={args.d_ff}, {args.threads} thread(s)"
    )
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
