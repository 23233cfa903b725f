"""The tables of ``benchmarks/forecasting.py``: test and validation parts, and merging cells."""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import forecasting  # noqa: E402

ROW = ("ETTh1", 96, "AarenForecaster(aaren, calendar hour_of_day x1)", 0.4, 0.41, "1s fit")
STREAM = "| ETTh1 | 96 | 0.4000 | 0.3990 | -0.25 % | 2785 |"


def test_a_validation_table_says_so_and_leaves_out_the_published_test_figures() -> None:
    test = forecasting._table([ROW], [STREAM], "cpu")
    val = forecasting._table([ROW], [STREAM], "cpu", part="val")
    assert "all stride-1 test windows" in test[0] and "0.386" in test[6]  # iTransformer's, published
    assert "validation windows, fitted on the training part alone" in val[0]
    assert val[6].split("|")[6:8] == [" – ", " – "]
    assert any("through the validation part" in line for line in val)
    assert any("through validation and test" in line for line in test)


def test_the_plot_has_a_line_per_backbone_and_calendar() -> None:
    assert forecasting._plot_label("AarenForecaster(aaren, seed 0)") == "AarenForecaster(aaren)"
    assert forecasting._plot_label(ROW[2]) == ROW[2]
    with_more = "AarenForecaster(aaren, calendar hour_of_day x1, validation part)"
    assert forecasting._plot_label(with_more) == ROW[2]
    assert forecasting._plot_label("last value") == "last value"


def test_merged_cells_keep_their_part(tmp_path) -> None:
    cells = []
    for horizon in (96, 192):
        cell = tmp_path / f"val_{horizon}.md"
        rows = [
            (*ROW[:1], horizon, *ROW[2:]),
            ("ETTh1", horizon, "AarenForecaster(aaren, seed 0)", 0.5, 0.5, ""),
        ]
        cell.write_text("\n".join(forecasting._table(rows, [STREAM], "cpu", part="val")) + "\n")
        cells.append(cell)
    lines = forecasting.merge_tables(cells, tmp_path / "merged.md")
    assert "validation windows" in lines[0]
    assert sum(line.startswith("| ETTh1 |") for line in lines) == 4 + 2  # four rows, two streamed
    assert any("through the validation part" in line for line in lines)
    assert (tmp_path / "merged.png").stat().st_size > 0
