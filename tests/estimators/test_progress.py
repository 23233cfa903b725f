"""One progress display a fit: the bar's accounting of planned, unplanned, nested and early-ended stages,
the lines where there is no terminal, and silence without a fit in progress."""

from __future__ import annotations

import io
import re

from aaren_ts.estimators._progress import EpochProgress, fit_progress, note, stage


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _last_count(text: str) -> tuple[int, int]:
    """The bar's last ``n/total``."""
    n, total = re.findall(r"(\d+)/(\d+) \[", text)[-1]
    return int(n), int(total)


def _train(epochs: int) -> None:
    for _ in range(epochs):
        EpochProgress().on_epoch_end(net=None)


def test_the_bar_covers_planned_stages_and_grows_for_unplanned_ones():
    out = _Terminal()
    with fit_progress(1, "Model.fit", planned_epochs=6, planned_stages=2, stream=out) as progress:
        assert progress is not None
        with stage("network 1 of 2", epochs=3):
            _train(3)
        with stage("network 2 of 2", epochs=3):
            _train(1)  # stopped early: the bar moves to the stage's end
        assert _last_count(out.getvalue()) == (6, 6)
        with stage("network 2 again", epochs=3):  # not planned: the bar grows
            _train(2)
        assert _last_count(out.getvalue()) == (9, 9)
        assert progress.epochs_done == 6
    text = out.getvalue()
    assert "Model.fit: network 2 again" in text and "Model.fit: done" in text
    assert text.endswith("\n")


def test_a_stage_inside_another_counts_its_own_epochs():
    out = _Terminal()
    with fit_progress(1, "Model.fit", planned_epochs=5, planned_stages=2, stream=out):
        with stage("network 1 of 1", epochs=4):
            _train(1)
            with stage("a half network", epochs=1):
                _train(3)  # (only its 1 planned epoch moves the bar)
            assert _last_count(out.getvalue()) == (2, 5)
            _train(2)
        assert _last_count(out.getvalue()) == (5, 5)


def test_without_a_terminal_a_line_a_stage():
    out = io.StringIO()
    with fit_progress(1, "Model.fit", planned_epochs=2, planned_stages=1, stream=out):
        with stage("network 1 of 1", epochs=2):
            _train(2)
        with stage("decisions"):
            note("kept the network")
    lines = out.getvalue().splitlines()
    assert re.fullmatch(r"Model\.fit: network 1 of 1: 2 epochs, \d+\.\d s", lines[0])
    assert lines[1] == "Model.fit: kept the network"
    assert re.fullmatch(r"Model\.fit: decisions: \d+\.\d s", lines[2])
    assert re.fullmatch(r"Model\.fit: done in \d+\.\d s", lines[3])
    assert "\r" not in out.getvalue()


def test_silent_without_verbose_and_outside_a_fit(capsys):
    with fit_progress(0, "Model.fit", planned_epochs=2, planned_stages=1) as progress:
        assert progress is None
        with stage("network 1 of 1", epochs=2):
            _train(2)
        note("nothing")
    with stage("outside"):
        note("nothing either")
    assert capsys.readouterr() == ("", "")


def test_a_fit_inside_another_joins_its_display():
    out = io.StringIO()
    with fit_progress(1, "Outer.fit", planned_epochs=1, planned_stages=1, stream=out) as outer:
        with fit_progress(1, "Inner.fit", planned_epochs=1, planned_stages=1, stream=out) as inner:
            assert inner is outer
    assert out.getvalue().count("done in") == 1
