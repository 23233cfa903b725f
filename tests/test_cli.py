"""The ``aaren-ts`` command: common options, help, progress output, and a forecast without matplotlib."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from aaren_ts.cli import build_parser, main
from aaren_ts.estimators._fit_report import FIT_STEPS
from aaren_ts.jobs._common import estimator_options, parse_param

JOBS = ("classify", "forecast")

#: every common option with a non-default value, and where it lands in the parsed arguments
COMMON = [
    "--dataset",
    "X",
    "--data-home",
    "some/folder",
    "--random-state",
    "7",
    "--device",
    "cpu",
    "--threads",
    "2",
    "--max-epochs",
    "3",
    "--backbone",
    "transformer",
    "--verbose",
    "2",
    "--no-download",
]
EXPECTED = {
    "dataset": "X",
    "data_home": "some/folder",
    "random_state": 7,
    "device": "cpu",
    "threads": 2,
    "max_epochs": 3,
    "backbone": "transformer",
    "verbose": 2,
    "no_download": True,
}


def _parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


@pytest.mark.parametrize("job", JOBS)
def test_both_jobs_take_the_common_options(job: str) -> None:
    args = _parse(job, *COMMON)
    assert {key: getattr(args, key) for key in EXPECTED} == EXPECTED


def test_the_jobs_agree_on_the_common_defaults() -> None:
    classify, forecast = (vars(_parse(job)) for job in JOBS)
    for key in EXPECTED:
        if key not in ("dataset", "max_epochs"):  # each job has its own dataset and epoch budget
            assert classify[key] == forecast[key], key
    assert classify["verbose"] == 1  # progress is shown by default
    assert classify["random_state"] == 0


@pytest.mark.parametrize("job", JOBS)
def test_quiet_and_the_former_seed_flag(job: str) -> None:
    assert _parse(job, "--quiet").verbose == 0
    assert _parse(job, "-q").verbose == 0
    assert _parse(job, "--seed", "5").random_state == 5  # `aaren-ts classify --seed` still works
    with pytest.raises(SystemExit):
        _parse(job, "--quiet", "--verbose", "2")  # one or the other


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("n_estimators=1", 1),
        ("lr=1e-3", 1e-3),
        ("patience=null", None),  # JSON, as the results page's commands write it
        ("patience=None", None),  # or a Python literal
        ("channel_independent=true", True),
        ('loss=["mse", "smape"]', ["mse", "smape"]),
        ("dilations=(1, 2, 4)", (1, 2, 4)),
        ("combination=theta", "theta"),  # anything else: the string itself
        ("combination=", ""),
    ],
)
def test_param_values(text: str, value: object) -> None:
    name = text.partition("=")[0]
    assert parse_param(text) == (name, value)
    assert _parse("forecast", "--param", text).param == [(name, value)]


@pytest.mark.parametrize("text", ["n_estimators", "=1", "n estimators=1", "2x=1"])
def test_param_without_a_name_is_a_usage_error(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        _parse("classify", "--param", text)
    assert raised.value.code == 2
    assert f"argument --param: expected NAME=VALUE, got {text!r}" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("job", "estimator"), [("classify", "AarenClassifier"), ("forecast", "AarenForecaster")]
)
def test_params_reach_the_estimator_after_the_common_options(job: str, estimator: str) -> None:
    import aaren_ts

    cls = getattr(aaren_ts, estimator)
    args = _parse(job, "--max-epochs", "3", "--param", "n_estimators=1", "--param", "lr=0.01")
    options = estimator_options(args, cls)
    assert options["n_estimators"] == 1 and options["lr"] == 0.01 and options["max_epochs"] == 3
    cls(**options)  # every name is one of the estimator's parameters

    with pytest.raises(
        SystemExit, match=rf"--param lr_rate: {estimator} has no such parameter \(its .*\blr\b"
    ):
        estimator_options(_parse(job, "--param", "lr_rate=0.01"), cls)
    with pytest.raises(SystemExit, match="--param max_epochs: use --max-epochs instead"):
        estimator_options(_parse(job, "--param", "max_epochs=3"), cls)
    with pytest.raises(SystemExit, match="--param num_threads: use --threads instead"):
        estimator_options(_parse(job, "--param", "num_threads=2"), cls)


def test_output_only_where_the_job_writes_files() -> None:
    assert _parse("forecast").output == "forecast_output"
    assert not hasattr(_parse("classify"), "output")


@pytest.mark.parametrize("argv", [["--help"], ["classify", "--help"], ["forecast", "--help"]])
def test_help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: aaren-ts")
    if len(argv) == 2:
        for flag in ("--random-state", "--threads", "--quiet", "--no-download", "--device"):
            assert flag in out
        assert "--seed" not in out  # the former name is accepted, not advertised


def _forecast(tmp_path: Path, *extra: str) -> list[str]:
    return ["forecast", "--max-epochs", "1", "--output", str(tmp_path / "plots"), "--device", "cpu", *extra]


def test_forecast_without_matplotlib_finishes_and_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    assert main(_forecast(tmp_path, "--quiet")) == 0
    out = capsys.readouterr().out
    assert "install aaren_ts[plot] for the plot" in out
    assert "AarenForecaster" in out and "seasonal naive (sp=12)" in out  # the table is still printed
    # what the fit decided, a line per step
    assert "what the fit decided" in out
    assert all(any(line.startswith(step.name) for line in out.splitlines()) for step in FIT_STEPS)
    assert not (tmp_path / "plots").exists()


def test_forecast_shows_progress_by_default_and_plots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    assert main(_forecast(tmp_path)) == 0
    out, err = capsys.readouterr()
    # captured, not a terminal: a line a stage on standard error, no epoch table, no colour codes
    assert "AarenForecaster.fit: network 1 of " in err and "AarenForecaster.fit: done in" in err
    assert "train_loss" not in out + err
    assert "\x1b[" not in out + err
    assert "seasonal naive (sp=12)" in out
    assert (tmp_path / "plots" / "forecast_airline_aaren.png").is_file()


def test_forecast_through_a_pipe_writes_plain_text(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "aaren_ts.cli", *_forecast(tmp_path), "--threads", "1"]
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,  # pipes, as in `aaren-ts ... | tee`
    )
    assert done.returncode == 0, done.stderr
    assert "airline T=12 AarenForecaster" in done.stdout
    assert "AarenForecaster.fit: done in" in done.stderr and "train_loss" not in done.stdout
    assert "\x1b[" not in done.stdout + done.stderr
    assert "\r" not in done.stdout + done.stderr  # no progress bar redrawn in place
    assert "Warning" not in done.stderr  # sktime's notices included


def test_forecast_quiet_shows_no_progress(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_forecast(tmp_path, "--quiet")) == 0
    captured = capsys.readouterr()
    assert "train_loss" not in captured.out + captured.err
    assert "airline T=12 AarenForecaster" in captured.out


def test_classify_through_a_pipe_prints_a_short_report(tmp_path: Path) -> None:
    # the defaults but for one epoch a network (the lines are the same): a line a stage, then the result
    argv = [sys.executable, "-m", "aaren_ts.cli", "classify", "--max-epochs", "1", "--device", "cpu"]
    argv += ["--data-home", str(tmp_path), "--no-download"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    lines = (done.stdout + done.stderr).splitlines()
    assert len(lines) <= 30, lines
    assert "AarenClassifier.fit: network 2 of 2: 1 epoch" in done.stderr and "test accuracy" in done.stdout
    assert "\r" not in done.stdout + done.stderr


@pytest.mark.parametrize("quiet", [False, True])
def test_classify_progress(quiet: bool, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["classify", "--max-epochs", "1", "--device", "cpu", "--data-home", str(tmp_path), "--no-download"]
    # one network and fewer kernels: the progress is the same, the defaults' job is tested beside the job
    argv += ["--param", "n_estimators=1", "--param", "n_random_features=840"]
    assert main(argv + (["--quiet"] if quiet else [])) == 0
    captured = capsys.readouterr()
    assert ("AarenClassifier.fit: network 1 of 1: 1 epoch" in captured.err) is not quiet
    assert "train_loss" not in captured.out + captured.err  # the epoch tables need --verbose 2
    assert "\x1b[" not in captured.out + captured.err
    assert "test accuracy" in captured.out and "paper, Aaren: 96.65 %" in captured.out


@pytest.mark.parametrize(
    ("n_inside", "said"),
    [
        (12, False),
        (10, False),
        (9, False),
        (8, True),
        (3, True),
    ],  # of 12 at 90 %: P(<= 9) 11 %, P(<= 8) 2.6 %
)
def test_forecast_says_when_intervals_cover_clearly_too_little(n_inside: int, said: bool) -> None:
    from aaren_ts.jobs.forecast import coverage_note

    note = coverage_note(n_inside, 12, 0.9, "months")
    assert bool(note) is said
    if said:
        assert "well below the nominal 90 %" in note and f"{n_inside} or fewer of 12 months" in note
