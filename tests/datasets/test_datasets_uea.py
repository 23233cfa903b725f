"""UEA loaders: sktime's bundled copies, small ``.ts`` files in the archive's format, validation splits,
and the zero-argument loaders of sktime's benchmarks."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from aaren_ts.datasets import (
    DatasetIntegrityError,
    DatasetNotFoundError,
    forecasting_loader,
    load_uea,
    train_val_split,
    uea_archive_cv,
    uea_loader,
)
from aaren_ts.datasets import uea as uea_module


def _ts_text(name: str, n_cases: int, n_dims: int, length: int, labels: list[str], seed: int = 0) -> str:
    rng = np.random.default_rng(seed)
    head = [
        f"@problemName {name}",
        "@timeStamps false",
        "@missing false",
        "@univariate false",
        f"@dimensions {n_dims}",
        "@equalLength true",
        f"@seriesLength {length}",
        f"@classLabel true {' '.join(sorted(set(labels)))}",
        "@data",
    ]
    rows = []
    for case in range(n_cases):
        dims = [",".join(f"{v:.4f}" for v in rng.normal(size=length)) for _ in range(n_dims)]
        rows.append(":".join(dims) + f":{labels[case % len(labels)]}")
    return "\n".join(head + rows) + "\n"


def _write_uea(home: Path, name: str, split: str, text: str) -> Path:
    path = home / "Multivariate_ts" / name / f"{name}_{split}.ts"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_japanese_vowels_without_any_data_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AAREN_TS_DATA", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # default folder ~/aaren_ts_data does not exist
    X, y = load_uea("JapaneseVowels", split="train", download_if_missing=False)
    assert isinstance(X, pd.DataFrame) and X.shape == (270, 12)  # unequal length: nested_univ
    assert sorted(pd.Series(y).value_counts().tolist()) == [30] * 9
    X_all, y_all = load_uea("japanesevowels", download_if_missing=False)
    assert len(X_all) == 640 and list(X_all.index) == list(range(640))
    assert (y_all[:270] == y).all()
    lengths = X_all.iloc[:, 0].map(len)
    assert lengths.min() == 7 and lengths.max() == 29
    series = load_uea("JapaneseVowels", "test", return_type="list", download_if_missing=False)[0]
    assert len(series) == 370 and all(s.shape[0] == 12 for s in series)
    assert {s.shape[1] for s in series} == set(lengths[270:])
    X_mi, _ = load_uea("JapaneseVowels", "test", return_type="pd-multiindex", download_if_missing=False)
    assert X_mi.index.nlevels == 2 and X_mi.shape == (int(lengths[270:].sum()), 12)
    with pytest.raises(ValueError, match=r"numpy3D.*equal-length.*7 to 29"):
        load_uea("JapaneseVowels", return_type="numpy3D", download_if_missing=False)
    assert not (tmp_path / "aaren_ts_data").exists()


def test_basic_motions_numpy3d(tmp_path: Path) -> None:
    X, y = load_uea("BasicMotions", data_home=tmp_path, download_if_missing=False)
    assert X.shape == (80, 6, 100) and X.dtype == np.float64
    assert sorted(pd.Series(y).value_counts().items()) == [  # spelled as in the file's header
        ("Badminton", 20),
        ("Running", 20),
        ("Standing", 20),
        ("Walking", 20),
    ]
    X_tr, _y_tr = load_uea("BasicMotions", "TRAIN", data_home=tmp_path, download_if_missing=False)
    np.testing.assert_array_equal(X_tr, X[:40])


def test_small_file_in_archive_format(tmp_path: Path) -> None:
    labels = ["abnormal", "normal"]
    _write_uea(tmp_path, "Heartbeat", "TRAIN", _ts_text("Heartbeat", 6, 61, 8, labels))
    _write_uea(tmp_path, "Heartbeat", "TEST", _ts_text("Heartbeat", 4, 61, 8, labels, seed=1))
    X, y = load_uea("Heartbeat", data_home=tmp_path, verify=False, download_if_missing=False)
    assert X.shape == (10, 61, 8) and list(y[:3]) == ["abnormal", "normal", "abnormal"]
    X_tr, _ = load_uea("Heartbeat", "train", data_home=tmp_path, verify=False, return_type="nested_univ")
    assert X_tr.shape == (6, 61)
    with pytest.raises(
        DatasetIntegrityError, match=r"Heartbeat .*truncated: it has 6 cases, the upstream file 204"
    ):
        load_uea("Heartbeat", "train", data_home=tmp_path, download_if_missing=False)


def test_corrupt_ts_file(tmp_path: Path) -> None:
    text = _ts_text("Heartbeat", 6, 61, 8, ["abnormal", "normal"])
    _write_uea(tmp_path, "Heartbeat", "TRAIN", text[: len(text) - 300])
    with pytest.raises(DatasetIntegrityError, match=r"Heartbeat file .* not a readable .ts file"):
        load_uea("Heartbeat", "train", data_home=tmp_path, verify=False)


def test_missing_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(DatasetNotFoundError) as info:
        load_uea("SelfRegulationSCP1", data_home=tmp_path, download_if_missing=False)
    message = str(info.value)
    assert "Multivariate_ts/SelfRegulationSCP1/SelfRegulationSCP1_TRAIN.ts" in message
    assert str(tmp_path) in message and "timeseriesclassification.com" in message

    def offline(info: object, data_home: object) -> None:
        raise RuntimeError("Could not download/extract dataset")

    monkeypatch.setattr(uea_module, "_download", offline)
    with pytest.raises(DatasetNotFoundError, match="through sktime failed: Could not download"):
        load_uea("SelfRegulationSCP1", "test", data_home=tmp_path)


def test_download_through_sktime_lands_in_the_data_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = []

    def fake_download(info: object, data_home: object) -> None:  # what sktime's extraction leaves behind
        calls.append(info.name)  # type: ignore[attr-defined]
        for split, n in (("TRAIN", 4), ("TEST", 2)):
            _write_uea(tmp_path, "PEMS-SF", split, _ts_text("PEMS-SF", n, 3, 5, ["1.0", "2.0"]))

    monkeypatch.setattr(uea_module, "_download", fake_download)
    X, _y = load_uea("PEMS-SF", data_home=tmp_path, verify=False)
    assert calls == ["PEMS-SF"] and X.shape == (6, 3, 5)
    load_uea("PEMS-SF", data_home=tmp_path, verify=False)
    assert calls == ["PEMS-SF"]  # present now: not downloaded again


def test_bad_arguments() -> None:
    with pytest.raises(
        ValueError, match=r"unknown UEA classification dataset 'Wafer'; known: JapaneseVowels"
    ):
        load_uea("Wafer")
    with pytest.raises(ValueError, match="split must be 'train', 'test' or None"):
        load_uea("BasicMotions", split="val")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="return_type must be"):
        load_uea("BasicMotions", return_type="numpy4D")


@pytest.mark.parametrize("return_type", ["numpy3D", "list", "nested_univ", "pd-multiindex"])
def test_train_val_split_stratified_and_seeded(return_type: str) -> None:
    X, y = load_uea("BasicMotions", "train", return_type=return_type, download_if_missing=False)
    X_tr, X_val, y_tr, y_val = train_val_split(X, y, val_size=0.25, random_state=3)
    assert len(y_tr) == 30 and len(y_val) == 10
    assert sorted(pd.Series(y_val).value_counts().tolist()) == [2, 2, 3, 3]  # 4 classes x 10: stratified
    again = train_val_split(X, y, val_size=0.25, random_state=3)
    np.testing.assert_array_equal(again[3], y_val)
    other = train_val_split(X, y, val_size=0.25, random_state=4)
    assert not np.array_equal(other[3], y_val) or not np.array_equal(other[2], y_tr)
    if return_type == "numpy3D":
        rows = {X_val[i].tobytes() for i in range(10)} | {X_tr[i].tobytes() for i in range(30)}
        assert len(rows) == 40  # disjoint and complete
    if return_type == "pd-multiindex":
        assert X_val.index.get_level_values(0).nunique() == 10
    with pytest.raises(ValueError, match="40 cases but y has 39"):
        train_val_split(X, y[:-1])


@pytest.mark.filterwarnings("ignore:Degrees of freedom:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
def test_classification_benchmark_runs_on_the_archive_split(tmp_path: Path) -> None:
    from sklearn.metrics import accuracy_score
    from sktime.benchmarking.classification import ClassificationBenchmark
    from sktime.classification.dummy import DummyClassifier

    loader = uea_loader("BasicMotions", download_if_missing=False)
    assert loader.__name__ == "BasicMotions"
    assert pickle.loads(pickle.dumps(loader)).__name__ == "BasicMotions"
    cv = uea_archive_cv("BasicMotions")
    _X, y = loader()
    ((train, test),) = list(cv.split(np.arange(len(y))))
    np.testing.assert_array_equal(train, np.arange(40))
    np.testing.assert_array_equal(test, np.arange(40, 80))
    bench = ClassificationBenchmark()
    bench.add_estimator(DummyClassifier(strategy="most_frequent"), estimator_id="dummy")
    bench.add_task(loader, cv, [accuracy_score])
    results = bench.run(str(tmp_path / "results.csv"))
    assert results["validation_id"].iloc[0].startswith("[dataset=BasicMotions]")
    assert results["accuracy_score_fold_0_test"].iloc[0] == pytest.approx(0.25)  # 4 balanced classes


def test_forecasting_loader_for_sktime(tmp_path: Path) -> None:
    from sktime.benchmarking.forecasting import ForecastingBenchmark
    from sktime.performance_metrics.forecasting import MeanSquaredError

    from aaren_ts.datasets import protocol_cv

    loader = forecasting_loader("ETTh1", split="test", scale=True, data_home=tmp_path)
    assert loader.__name__ == "ETTh1_test" and "ETTh1" in repr(loader)
    bench = ForecastingBenchmark()
    bench.add_task(loader, protocol_cv(96, 96), [MeanSquaredError()])
    assert any("[dataset=ETTh1_test]" in key for key in bench.tasks.entities)  # task id from __name__
    with pytest.raises(DatasetNotFoundError):  # called lazily, by the benchmark
        forecasting_loader("ETTh1", data_home=tmp_path, download_if_missing=False)()
    with pytest.raises(ValueError, match="split must be"):
        forecasting_loader("ETTh1", split="validation")
