"""Aaren attention op vs causal SDPA (the Transformer layer's cost) and vs cumsum (the bandwidth floor).

For each sequence length N it times the forward and forward+backward passes of

* ``aaren_attention(s, v)`` (scores ``(B, H, N)``, values ``(B, H, N, D)``),
* ``scaled_dot_product_attention(q, k, v, is_causal=True)`` with ``q, k, v`` of the size of ``v``,
* ``torch.cumsum(v, dim=-2)``, a pass over a tensor the size of ``v`` (what any O(N) scan must pay),

and counts the bytes autograd keeps for Aaren's backward, as a multiple of ``v``'s size. All figures are
ratios measured in the same run (absolute times on a shared machine mean little).

Run ``python benchmarks/attention_op.py`` (about 3 minutes on 2 cores); ``--quick`` for a smoke run.
"""

from __future__ import annotations

import argparse

import torch
from _common import best_time, markdown_table, results_dir
from torch.nn import functional as F

from aaren_ts.nn.functional import aaren_attention


def saved_bytes(fn) -> int:
    """Bytes of the distinct storages autograd saves while running ``fn``."""
    storages: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    del out
    return sum(storages.values())


def measure(n: int, batch: int, heads: int, dim: int, repeats: int) -> dict[str, float]:
    gen = torch.Generator().manual_seed(n)
    s = torch.randn(batch, heads, n, generator=gen).requires_grad_()
    q, k, v = (torch.randn(batch, heads, n, dim, generator=gen).requires_grad_() for _ in range(3))
    v_bytes = v.nelement() * v.element_size()

    def aaren_fb() -> None:
        aaren_attention(s, v).sum().backward()

    def sdpa_fb() -> None:
        F.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()

    def cumsum_fb() -> None:
        torch.cumsum(v, dim=-2).sum().backward()

    with torch.no_grad():
        t = {
            "aaren_f": best_time(lambda: aaren_attention(s, v), repeats),
            "sdpa_f": best_time(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), repeats),
            "cumsum_f": best_time(lambda: torch.cumsum(v, dim=-2), repeats),
        }
    t["aaren_fb"] = best_time(aaren_fb, repeats)
    t["sdpa_fb"] = best_time(sdpa_fb, repeats)
    t["cumsum_fb"] = best_time(cumsum_fb, repeats)
    t["saved_x_v"] = saved_bytes(lambda: aaren_attention(s, v)) / v_bytes
    return t


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lengths", type=int, nargs="+", default=[96, 512, 2048, 8192])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=32 * 2048,
        help="cap on batch*N: longer sequences use a smaller batch (same for all three ops) so that "
        "quadratic SDPA finishes; ratios are unaffected",
    )
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    parser.add_argument("--quick", action="store_true", help="N in {96, 512}, batch 8: a smoke run")
    parser.add_argument("--out", default=None, help="results folder (default benchmarks/results)")
    args = parser.parse_args(argv)
    if args.quick:
        args.lengths, args.batch, args.repeats = [96, 512], 8, 2
    if args.threads:
        torch.set_num_threads(args.threads)

    rows = []
    for n in args.lengths:
        batch = max(1, min(args.batch, args.max_tokens // n))
        t = measure(n, batch, args.heads, args.dim, args.repeats)
        rows.append(
            [
                n,
                batch,
                f"{t['aaren_f'] * 1e3:.1f}",
                f"{t['aaren_fb'] * 1e3:.1f}",
                f"{t['aaren_f'] / t['sdpa_f']:.2f}",
                f"{t['aaren_fb'] / t['sdpa_fb']:.2f}",
                f"{t['aaren_f'] / t['cumsum_f']:.2f}",
                f"{t['aaren_fb'] / t['cumsum_fb']:.2f}",
                f"{t['saved_x_v']:.2f}",
            ]
        )
        print(" | ".join(str(c) for c in rows[-1]), flush=True)
    header = [
        "N",
        "B",
        "Aaren fwd ms",
        "Aaren fwd+bwd ms",
        "fwd / SDPA",
        "fwd+bwd / SDPA",
        "fwd / cumsum",
        "fwd+bwd / cumsum",
        "saved bytes / bytes of v",
    ]
    title = (
        f"Aaren attention op, H={args.heads}, D={args.dim}, float32, "
        f"{torch.get_num_threads()} thread(s); ratios < 1 mean Aaren is faster"
    )
    text = f"### {title}\n\n{markdown_table(header, rows)}\n"
    path = results_dir(args.out) / "attention_op.md"
    path.write_text(text)
    print(f"\n{text}\nwritten to {path}")


if __name__ == "__main__":
    main()
