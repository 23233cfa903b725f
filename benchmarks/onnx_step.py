"""One streaming step: ONNX Runtime against the fused C step and the PyTorch step, one thread.

Two levels, at 1 stream and at ``--streams`` streams (1024 by default), every figure the best of
``--repeats`` timed runs of ``--inner`` calls, the paths' runs alternating, all in the same run:

* **Encoder step** (what the fused C kernel computes): the Aaren encoder of one of the default
  forecaster's networks (2 layers, ``d_model=64``, 4 heads, ``d_ff=128``) advancing every stream by
  one token, through the fused C kernel, through PyTorch operations (the same step without the
  kernel), and through ONNX Runtime (the same step exported with ``torch.onnx.export``). Beside them
  the FLOP floor: the step's matrix products as plain sgemms of the same shapes (``torch.mm``).
* **Forecaster step** (what a server runs): one observation per stream and the new forecast (every
  network of the default ensemble of three), through the estimator (``partial_update_array`` +
  ``predict_array``), through ``OnnxStreamer`` (``partial_update`` + ``predict``, numpy in and out),
  and through the exported graph alone (``InferenceSession.run`` on prepared inputs), with the
  default online interval calibration and, at many streams, also without it. Floor: the model's
  matrix products as sgemms.

Usage::

    python benchmarks/onnx_step.py

Writes ``benchmarks/results/onnx_step.md``. Needs the ``onnx`` extra.
"""

from __future__ import annotations

import argparse
import platform
import tempfile
import warnings
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pandas as pd
import torch
from _common import best_times, gemm_floor, markdown_table, results_dir
from torch import nn

from aaren_ts import AarenForecaster
from aaren_ts.nn import fused_step_available
from aaren_ts.nn.blocks import StackedEncoder
from aaren_ts.nn.encoder import _StepPlan
from aaren_ts.nn.ensemble import member_networks
from aaren_ts.nn.functional import AarenState
from aaren_ts.onnx import OnnxStreamer
from aaren_ts.onnx.export import _quiet_exporter


class EncoderStep(nn.Module):
    """The encoder's step with its state as flat inputs and outputs (for the export)."""

    def __init__(self, encoder: nn.Module) -> None:
        super().__init__()
        self.encoder = encoder

    def forward(self, x: torch.Tensor, *flat: torch.Tensor):
        state = [AarenState(*flat[i : i + 3]) for i in range(0, len(flat), 3)]
        y, new = StackedEncoder.step(self.encoder, x, state)
        return (y, *[t for layer in new for t in layer])


def _panel(n_series: int, length: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    t = np.arange(length)
    frames = []
    for k in range(n_series):
        values = 100 + 10 * np.sin(2 * np.pi * (t + k) / 24) + rng.normal(0, 1, length).cumsum()
        index = pd.MultiIndex.from_arrays([[f"s{k}"] * length, t], names=["series", "time"])
        frames.append(pd.DataFrame({"y": values}, index=index))
    return pd.concat(frames)


def _session(path: Path) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), sess_options=options, providers=["CPUExecutionProvider"])


def _microseconds(seconds: dict[str, float]) -> dict[str, float]:
    return {name: t * 1e6 for name, t in seconds.items()}


def _encoder_rows(encoder, streams: int, inner: int, repeats: int, folder: Path) -> list[list[object]]:
    plan = _StepPlan(encoder)
    x = torch.randn(streams, encoder.d_model)
    state = encoder.init_state(streams)
    with torch.no_grad():
        for _ in range(5):  # a state that has seen tokens
            _, state = plan._step_torch(torch.randn_like(x), state)
        flat = [t.contiguous() for layer in state for t in layer]
        path = folder / f"encoder-{streams}.onnx"
        if not path.exists():
            dim = torch.export.Dim("streams")
            with _quiet_exporter():
                torch.onnx.export(
                    EncoderStep(encoder).eval(),
                    (x, *flat),
                    path,
                    dynamo=True,
                    external_data=False,
                    dynamic_shapes=[{0: dim}, ({0: dim},) * len(flat)],
                )
        session = _session(path)
        names = [i.name for i in session.get_inputs()]
        feed = dict(zip(names, [x.numpy(), *(t.numpy() for t in flat)], strict=True))
        calls = {
            "PyTorch step": lambda: plan._step_torch(x, state),
            "ONNX Runtime": lambda: session.run(None, feed),
        }
        if plan.native is not None:
            calls["fused C step"] = lambda: plan._step_native(x, state)
        calls["sgemm floor"] = gemm_floor([m for m in encoder.modules() if isinstance(m, nn.Linear)], streams)
        times = _microseconds(best_times(calls, repeats, inner))
    floor = times.pop("sgemm floor")
    fused = times.get("fused C step")
    rows = []
    for name, t in times.items():
        versus = f"{t / fused:.2f}x" if fused else "-"
        rows.append([f"encoder step, {streams} stream(s)", name, f"{t:.1f}", versus, f"{t / floor:.1f}x"])
    rows.append([f"encoder step, {streams} stream(s)", "sgemm floor", f"{floor:.1f}", "-", "1.0x"])
    return rows


def _forecaster_rows(
    f: AarenForecaster, inner: int, repeats: int, folder: Path, note: str = ""
) -> list[list[object]]:
    """Every stream of ``f`` advanced by one observation, then every forecast read."""
    streams = len(f.series_ids_)
    rng = np.random.default_rng(1)
    last = f.predict_array()[:, 0, :]
    new = last + rng.normal(0, 0.1, last.shape)
    streamer = OnnxStreamer(f.to_onnx(folder / f"forecaster-{streams}{len(note)}.onnx"))
    spec, state = streamer.spec, streamer.state()
    feed = {spec.observation: new}
    feed.update((name, state[name]) for name in [*spec.constants, *spec.state])
    session = streamer._session
    linears = [m for m in f.net_.module_.modules() if isinstance(m, nn.Linear)]
    calls = {
        "estimator (partial_update_array + predict_array)": lambda: (
            f.partial_update_array(new),
            f.predict_array(),
        ),
        "OnnxStreamer (partial_update + predict)": lambda: (streamer.partial_update(new), streamer.predict()),
        "ONNX Runtime session.run alone": lambda: session.run(None, feed),
        "sgemm floor": gemm_floor(linears, streams * f.engine_.rows_per_series),
    }
    with torch.no_grad():
        times = _microseconds(best_times(calls, repeats, inner))
    floor = times.pop("sgemm floor")
    base = times["estimator (partial_update_array + predict_array)"]
    label = f"forecaster step{note}, {streams} stream(s)"
    rows = [[label, name, f"{t:.1f}", f"{t / base:.2f}x", f"{t / floor:.1f}x"] for name, t in times.items()]
    rows.append([label, "sgemm floor", f"{floor:.1f}", "-", "1.0x"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--streams", type=int, default=1024)
    parser.add_argument(
        "--inner", type=int, default=200, help="calls per timed run (divided by 20 at many streams)"
    )
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--output", default=None, help="results folder")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    torch.manual_seed(0)

    # a default-size forecaster (the step's cost does not depend on the training): one series, and a
    # panel of --streams series
    single = AarenForecaster(horizon=24, max_epochs=1, random_state=0, device="cpu").fit(
        _panel(1, 400)["y"].droplevel(0)
    )
    panel = _panel(args.streams, 200, seed=1)
    fitted = panel.index.get_level_values(0).isin(["s0", "s1", "s2", "s3"])
    many = {}
    for calibration in ("aci", None):
        f = AarenForecaster(
            horizon=24, interval_calibration=calibration, max_epochs=1, random_state=0, device="cpu"
        )
        f.fit(panel[fitted])
        f.partial_update(panel[~fitted])  # the other series start their streams (no training)
        many[calibration] = f
    encoder = member_networks(single.net_.module_)[0].encoder.eval()  # (one network of the ensemble)

    table = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for streams in (1, args.streams):
            inner = args.inner if streams == 1 else max(1, args.inner // 20)
            table += _encoder_rows(encoder, streams, inner, args.repeats, folder)
        table += _forecaster_rows(single, args.inner, args.repeats, folder)
        table += _forecaster_rows(many["aci"], max(1, args.inner // 20), args.repeats, folder)
        table += _forecaster_rows(
            many[None], max(1, args.inner // 20), args.repeats, folder, " (interval_calibration=None)"
        )

    header = ["step", "path", "µs per step", "vs fused C / estimator", "vs sgemm floor"]
    text = markdown_table(header, table)
    machine = (
        f"{platform.processor() or platform.machine()}, 1 thread, torch {torch.__version__}, "
        f"onnxruntime {ort.__version__}"
    )
    report = "\n\n".join(
        [
            "# One streaming step: ONNX Runtime, fused C, PyTorch",
            f"{machine}; fused C step available: {fused_step_available()}.",
            text,
        ]
    )
    folder = results_dir(args.output)
    out = folder / "onnx_step.md"
    out.write_text(report + "\n", encoding="utf-8")
    plot(table, folder / "onnx_step.png")
    print(report)
    print(f"written to {out} and onnx_step.png")


def plot(table: list[list[object]], path: Path) -> None:
    """One panel per step and stream count: microseconds per step of each path, log scale."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = list(dict.fromkeys(row[0] for row in table))
    fig, axes = plt.subplots(len(groups), 1, figsize=(8, 1.3 + 0.9 * len(groups) * 2.2), squeeze=False)
    colours = {"sgemm floor": "0.6", "fused C step": "C2", "ONNX Runtime": "C1", "PyTorch step": "C0"}
    for ax, group in zip(axes[:, 0], groups, strict=True):
        rows = [row for row in table if row[0] == group]
        names = [str(row[1]).split(" (")[0] for row in rows]
        values = [float(row[2]) for row in rows]
        colour = [colours.get(n, "C1" if "ONNX" in n or "Onnx" in n else "C0") for n in names]
        ax.barh(names, values, color=colour)
        ax.set_xscale("log")
        ax.invert_yaxis()
        ax.set_title(group, fontsize=10)
        for y, v in enumerate(values):
            ax.text(v, y, f" {v:,.0f} µs", va="center", fontsize=8)
        ax.set_xlim(min(values) / 2, max(values) * 6)
    axes[-1, 0].set_xlabel("µs per step (one thread, log scale)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    main()
