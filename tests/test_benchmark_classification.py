"""The pieces of ``benchmarks/classification.py`` (and its companions) that need neither aeon nor real
training.

Prefix cutting (shared with the aeon worker), the streamed accuracy curve, and the report: the
paper's ten problems listed with the paper's figure, ours where the run had the data; and the
mixing rules of ``benchmarks/classification_mixture.py``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

import _aeon_peers  # noqa: E402
import _common  # noqa: E402
import classification  # noqa: E402
import classification_validation  # noqa: E402
import early_validation  # noqa: E402


def test_prefix_lengths_and_padding() -> None:
    lengths = np.array([7, 29, 10, 1])
    assert _aeon_peers.prefix_lengths(lengths, 0.1).tolist() == [1, 3, 1, 1]
    assert _aeon_peers.prefix_lengths(lengths, 0.5).tolist() == [4, 15, 5, 1]
    assert _aeon_peers.prefix_lengths(lengths, 1.0).tolist() == lengths.tolist()
    values = np.full((2, 2, 12), np.nan)
    values[0, :, :12] = 1.0
    values[1, :, :3] = 2.0
    padded = _aeon_peers.pad(values, np.array([4, 3]), width=9)
    assert padded.shape == (2, 2, 9)
    assert padded[0, :, :4].tolist() == [[1.0] * 4] * 2 and not padded[0, :, 4:].any()
    assert padded[1, :, :3].tolist() == [[2.0] * 3] * 2 and not np.isnan(padded).any()
    data = {"X_train": values, "len_train": np.array([12, 3]), "X_test": values[:1, :, :5]}
    data["len_test"] = np.array([5])
    train, test = _aeon_peers._pad_pair(data)  # one common length, at least MiniRocket's kernel (9)
    assert train.shape == (2, 2, 12) and test.shape == (1, 2, 12)
    train, test = _aeon_peers._pad_pair(data, 0.25)
    assert train.shape[2] == test.shape[2] == 9


def test_streamed_curve_ends_at_predict() -> None:
    from aaren_ts import AarenClassifier

    rng = np.random.default_rng(0)
    X = [rng.normal(size=(2, n)) + (i % 2) for i, n in enumerate(rng.integers(5, 15, size=24))]
    y = np.array(["a", "b"] * 12)
    clf = AarenClassifier(d_model=8, n_heads=2, n_layers=1, d_ff=16, max_epochs=2, random_state=0)
    clf.fit(X, y)
    curve = classification.stream_curve(clf, X, y, (0.1, 0.5, 1.0))
    assert len(curve) == 3
    assert curve[-1] == pytest.approx(100.0 * np.mean(clf.predict(X) == y))
    assert clf.n_streams_ == 0  # the streams are closed again


def test_report_lists_the_paper_s_ten_problems(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(classification, "RESULTS", tmp_path)
    rows = [
        ["JapaneseVowels", "AarenClassifier", seed, acc, 20.0, 21.0, 0.1, 0.1]
        for seed, acc in ((0, 96.0), (1, 98.0))
    ] + [["JapaneseVowels", "MiniRocket", 0, 97.3, 1.0, 1.1, 0.2, 0.2]]
    curve = [["JapaneseVowels", "AarenClassifier (streamed)", 0, f, 50 + 40 * f] for f in (0.1, 1.0)]
    context = {
        "command": "python benchmarks/classification.py --data-home /somewhere --aeon-python /x/python",
        "params": {},
        "aeon": "aeon 1.0 (numpy 2.3)",
        "missing": {"Heartbeat": "not on this machine"},
    }
    report = classification.write_report(rows, curve, [], ["a note"], context, "clf")
    text = report.read_text()
    assert "--data-home $AAREN_TS_DATA" in text and "/somewhere" not in text and "/x/python" not in text
    assert "| JapaneseVowels | 97.00 ± 1.00 | 96.65 | 97.30 ± 0.00 |" in text
    assert "| Heartbeat | not on this machine | 74.15 |" in text
    for name in ("EthanolConcentration", "FaceDetection", "PEMS-SF", "SpokenArabicDigits", "Handwriting"):
        assert f"| {name} |" in text
    assert "| JapaneseVowels | AarenClassifier (streamed) | 54.00 ± 0.00 | 90.00 ± 0.00 |" in text
    assert (tmp_path / "clf.png").is_file() and (tmp_path / "clf_curve.png").is_file()


def test_early_report_summarises_the_seeds() -> None:
    import early_classification

    def run(dataset: str, seed: int, ours: float, teaser: float) -> dict:
        scores = {"accuracy": ours, "earliness": 0.1, "harmonic_mean": ours, "fit_cpu_s": 1.0}
        peer = {"accuracy": teaser, "earliness": 0.2, "harmonic_mean": teaser, "fit_cpu_s": 2.0}
        return {"dataset": dataset, "seed": seed, "aaren": scores, "aeon": {"models": {"TEASER": peer}}}

    assert early_classification._over_seeds([run("A", 0, 0.8, 0.9)]) == []  # one seed: no summary
    lines = early_classification._over_seeds([run("A", 0, 0.8, 0.9), run("A", 1, 0.6, 0.7)])
    assert lines[0] == "## Over seeds 0, 1 (mean ± sd)"
    rows = [line for line in "\n".join(lines).splitlines() if line.startswith("| A |")]
    assert rows[0].split(" | ")[1:6] == [
        "AarenClassifier.predict_early", "0.700 ± 0.100", "0.100 ± 0.000", "0.700 ± 0.100", "0.800 / 0.600"
    ]  # fmt: skip
    assert rows[1].split(" | ")[1] == "aeon TEASER" and "0.900 / 0.700" in rows[1]
    # paired by seed: ours minus TEASER's HM, -0.1 on both seeds
    paired = "\n".join(early_classification._paired([run("A", 0, 0.8, 0.9), run("A", 1, 0.6, 0.7)]))
    assert "| A | aeon TEASER | -0.100 ± 0.000 | 2 | 0 / 0 / 2 |" in paired
    assert early_classification._paired([run("A", 0, 0.8, 0.9)]) == []


def test_resample_split_keeps_the_archive_s_sizes_and_class_counts() -> None:
    rng = np.random.default_rng(0)
    X_train = [rng.normal(size=(2, n)) for n in rng.integers(5, 9, size=12)]
    X_test = [rng.normal(size=(2, n)) for n in rng.integers(5, 9, size=20)]
    y_train, y_test = np.array(list("aaaabbbbbbcc")), np.array(list("ab" * 8 + "cccc"))
    same = _common.resample_split(X_train, y_train, X_test, y_test, 0)
    assert same[0] == X_train and same[2] == X_test  # resample 0: the archive's split, in order
    assert same[1].tolist() == y_train.tolist() and same[3].tolist() == y_test.tolist()
    seen = set()
    for resample in (1, 2, 3):
        Xa, ya, Xb, yb = _common.resample_split(X_train, y_train, X_test, y_test, resample)
        assert len(Xa) == 12 and len(Xb) == 20
        assert sorted(ya.tolist()) == sorted(y_train.tolist())  # the archive's class counts in train
        assert sorted([*ya, *yb]) == sorted([*y_train, *y_test])
        pooled = [*X_train, *X_test]
        ids = [next(i for i, x in enumerate(pooled) if x is s) for s in [*Xa, *Xb]]
        assert sorted(ids) == list(range(32))  # every series once, the same objects
        labels = np.concatenate([y_train, y_test])
        assert labels[ids[:12]].tolist() == ya.tolist() and labels[ids[12:]].tolist() == yb.tolist()
        again = _common.resample_split(X_train, y_train, X_test, y_test, resample)
        assert all(a is b for a, b in zip(again[0], Xa, strict=True))  # a seed draws one split
        seen.add(tuple(ids[:12]))
    assert len(seen) == 3  # different resamples draw different splits
    with pytest.raises(ValueError, match="resample"):
        _common.resample_split(X_train, y_train, X_test, y_test, -1)


def test_paired_differences_pair_the_seeds_both_ran() -> None:
    rows = [["A", "ours", s, a] for s, a in ((0, 90.0), (1, 92.0), (2, 95.0))]
    rows += [["A", "peer", s, a] for s, a in ((0, 91.0), (1, 92.0), (3, 50.0))]
    rows += [["B", "ours", 0, 80.0], ["B", "peer", 0, 70.0]]  # one seed: left out
    d = _common.paired_differences(rows, "peer", "ours")
    assert list(d) == ["A"]
    assert d["A"]["n"] == 2 and d["A"]["mean"] == pytest.approx(-0.5)
    assert d["A"]["se"] == pytest.approx(np.std([-1.0, 0.0], ddof=1) / np.sqrt(2))
    assert (d["A"]["wins"], d["A"]["ties"], d["A"]["losses"]) == (0, 1, 1)


def test_resampled_peers_get_each_seed_s_own_split(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    data = (
        [rng.normal(size=(1, 6)) for _ in range(6)],
        np.array(list("aabbcc")),
        [rng.normal(size=(1, 6)) for _ in range(9)],
        np.array(list("abcabcabc")),
    )
    entries = classification._export({"D": data}, [0, 1, 2], tmp_path, resample=True)
    assert [e["seeds"] for e in entries] == [[0], [1], [2]]
    for entry, seed in zip(entries, (0, 1, 2), strict=True):
        saved = np.load(entry["path"])
        X_train, y_train, _, y_test = classification.split_for(data, seed, True)
        assert saved["y_train"].tolist() == y_train.tolist() and saved["y_test"].tolist() == y_test.tolist()
        assert np.array_equal(saved["X_train"][:, :, :6], np.stack(X_train))
    (entry,) = classification._export({"D": data}, [0, 1, 2], tmp_path, resample=False)
    assert entry["seeds"] == [0, 1, 2] and np.load(entry["path"])["y_test"].tolist() == list("abcabcabc")


def test_report_pairs_each_peer_with_the_classifier(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(classification, "RESULTS", tmp_path)
    rows = [["D", m, s, a, 1.0, 1.0, 0.1, 0.1] for m, s, a in [
        ("AarenClassifier", 0, 95.0), ("AarenClassifier", 1, 93.0),
        ("MiniRocket", 0, 94.0), ("MiniRocket", 1, 94.0),
    ]]  # fmt: skip
    context = {"command": "x", "params": {}, "aeon": "", "missing": {}, "resample": True}
    report = classification.write_report(rows, [], [], [], context, "paired").read_text()
    assert "resamples of TRAIN+TEST" in report
    assert "| D | MiniRocket | +0.00 ± 1.00 | 2 | 1 / 0 / 1 |" in report


def test_early_validation_scores_the_engine_s_rule() -> None:
    """Series 0 (4 steps) is confident in class 1 from step 2 on and right; series 1 (3 steps, padded to
    4) is confident in the wrong class 0 at step 1 only, then never again: decided at step 1 by a
    one-step rule, at its end (its final prediction, class 1, right) by a two-step one."""
    staged = np.full((2, 4, 2), 0.5)
    staged[0, 1:] = [0.1, 0.9]
    staged[1, 0] = [0.8, 0.2]
    staged[1, 2] = [0.4, 0.6]
    staged[1, 3] = [0.99, 0.01]  # past the series' end: never read
    lengths, codes = np.array([4, 3]), np.array([1, 1])
    accuracy, earliness, hm = early_validation.score_rule(staged, lengths, codes, 0.75, 1)
    assert accuracy == 0.5 and earliness == pytest.approx((2 / 4 + 1 / 3) / 2)
    assert hm == pytest.approx(early_validation.harmonic_mean(accuracy, earliness))
    accuracy, earliness, _ = early_validation.score_rule(staged, lengths, codes, 0.75, 2)
    assert accuracy == 1.0 and earliness == pytest.approx((3 / 4 + 1) / 2)


def test_early_validation_lead_rule_asks_for_a_lead_that_grows_with_the_time_seen() -> None:
    """Series 0 (8 steps) leads with class 1 from step 1 on, confident from step 4 on: decided at step
    4 whatever the fraction. Series 1 (8 steps) leads with class 0 at steps 1-3 and with class 1
    (confident, right) from step 4 on: with fraction 0.5 it is decided at step 6 (a lead of 3 steps,
    half of the time seen); with fraction 0.7 never (at step 8, 5 < ceil(5.6)): at its end, class 1.
    With fraction 0 the rule is the engine's one-step rule: step 4 for both."""
    staged = np.full((2, 8, 2), [0.4, 0.6])
    staged[0, :3] = [0.45, 0.55]
    staged[0, 3:] = [0.1, 0.9]
    staged[1, :3] = [0.6, 0.4]
    staged[1, 3:] = [0.2, 0.8]
    lengths, codes = np.array([8, 8]), np.array([1, 1])
    accuracy, earliness, hm = early_validation.score_lead_rule(staged, lengths, codes, 0.75, 0.5)
    assert accuracy == 1.0 and earliness == pytest.approx((4 / 8 + 6 / 8) / 2)
    assert hm == pytest.approx(early_validation.harmonic_mean(accuracy, earliness))
    assert early_validation.score_lead_rule(staged, lengths, codes, 0.75, 0.7)[1] == pytest.approx(0.75)
    assert early_validation.score_lead_rule(staged, lengths, codes, 0.75, 0.0) == pytest.approx(
        early_validation.score_rule(staged, lengths, codes, 0.75, 1)
    )


def test_mixture_parts_scores_each_part_and_restores_the_mixture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from aaren_ts import AarenClassifier

    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 2, 24)).astype("float32")
    y = np.where(X[:, 0, :8].mean(axis=1) > 0, "up", "down")
    clf = AarenClassifier(
        d_model=8, n_heads=2, n_layers=1, d_ff=16, max_epochs=2, n_random_features=500, random_state=0
    ).fit(X, y)
    before = clf.predict_proba(X)
    kernels, network = classification.mixture_parts(clf, X, y)
    np.testing.assert_array_equal(clf.predict_proba(X), before)  # the mixture as it was
    members = clf.net_.module_.members  # (an ensemble by default: every member's weight is set)
    saved = [(m.head_gain.clone(), m.head_weight.clone()) for m in members]
    for member, (gain, weight) in zip(members, saved, strict=True):
        member.set_head_gains(gain, weight * 0.0)
    assert kernels == pytest.approx(100.0 * np.mean(clf.predict(X) == y))
    for member, (gain, weight) in zip(members, saved, strict=True):
        member.set_head_gains(gain, weight)
    assert 0.0 <= network <= 100.0
    assert classification.mixture_parts(AarenClassifier(n_random_features=0), X, y) is None
    # streamed, the same parts: after the whole series as above, after half as the weights set by hand
    kernels_curve, network_curve = classification.streamed_parts(clf, list(X), y, (0.5, 1.0))
    np.testing.assert_array_equal(clf.predict_proba(X), before)
    assert (kernels_curve[1], network_curve[1]) == pytest.approx((kernels, network))
    for member, (gain, weight) in zip(members, saved, strict=True):
        member.set_head_gains(gain, weight * 0.0)
    assert kernels_curve == pytest.approx(classification.stream_curve(clf, list(X), y, (0.5, 1.0)))
    for member, (gain, weight) in zip(members, saved, strict=True):
        member.set_head_gains(gain, weight)
    assert classification.streamed_parts(AarenClassifier(n_random_features=0), list(X), y, (0.5,)) is None

    monkeypatch.setattr(classification, "RESULTS", tmp_path)
    rows = [["BasicMotions", "AarenClassifier", 0, 90.0, 1.0, 1.0, 0.1, 0.1]]
    context = {"command": "c", "params": {}, "aeon": None, "missing": {}}
    context["parts"] = [["BasicMotions", 0, 90.0, 95.0, 80.0], ["BasicMotions", 1, 92.0, 93.0, 84.0]]
    text = classification.write_report(rows, [], [], [], context, "clf").read_text()
    means = "| BasicMotions | 91.00 ± 1.00 | 94.00 ± 1.00 | 82.00 ± 2.00 |"
    assert f"{means} 90.00 / 95.00 / 80.00; 92.00 / 93.00 / 84.00 |" in text


def test_whole_series_floors_score_what_fit_would_have_set() -> None:
    """Fitted without the floor, each floor's accuracy is that of the weights ``fit`` sets with it: the
    floor 0 is the fit as it is, the floor 1 the network alone after the whole series."""
    from aaren_ts import AarenClassifier
    from aaren_ts.estimators.classification import _kernels

    rng = np.random.default_rng(3)
    X = rng.normal(size=(48, 2, 24)).astype("float32")
    y = np.where(X[:, 0, :8].mean(axis=1) > 0, "up", "down")
    small = {"d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16, "max_epochs": 2, "random_state": 0}
    floor = _kernels.WHOLE_SERIES_MIN_WEIGHT
    with classification.no_whole_series_floor():
        assert _kernels.WHOLE_SERIES_MIN_WEIGHT == 0.0
        clf = AarenClassifier(n_random_features=500, **small).fit(X, y)
    assert _kernels.WHOLE_SERIES_MIN_WEIGHT == floor > 0.0  # (restored)
    members = clf.net_.module_.members
    chosen = [float(m.head_weight[-1]) for m in members]
    before = clf.predict_proba(X)
    as_fitted, halves, network_only = classification.whole_series_floors(clf, X, y, [0.0, 0.5, 1.0])
    np.testing.assert_array_equal(clf.predict_proba(X), before)  # the weights as they were
    assert as_fitted == pytest.approx(100.0 * np.mean(clf.predict(X) == y))
    assert network_only == pytest.approx(classification.mixture_parts(clf, X, y)[1])
    for member, weight in zip(members, chosen, strict=True):  # the floor of 0.5, set by hand
        gain, weights = member.head_gain.clone(), member.head_weight.clone()
        if weight < 0.5:
            gain[-1], weights[-1] = 1.0, 0.5
        member.set_head_gains(gain, weights)
    assert halves == pytest.approx(100.0 * np.mean(clf.predict(X) == y))


def test_validation_scores_every_training_series_once_and_no_test_series(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import aaren_ts.datasets

    read = []
    real_load = aaren_ts.datasets.load_uea

    def spy(name, split=None, **kw):
        read.append(split)
        return real_load(name, split, **kw)

    monkeypatch.setattr(aaren_ts.datasets, "load_uea", spy)  # (the script imports it when it runs)
    tiny = ["--param", "d_model=8", "--param", "n_heads=2", "--param", "n_layers=1", "--param", "d_ff=16"]
    tiny += ["--param", "max_epochs=2", "--param", "n_estimators=1", "--param", "n_random_features=2000"]
    argv = ["--datasets", "BasicMotions", "--seeds", "0", "--folds", "2", "--out", str(tmp_path), *tiny]
    assert classification_validation.main([*argv, "--floors", "0", "1"]) == 0
    assert read == ["train"]  # the test split is never read
    saved = json.loads((tmp_path / "classification_validation.json").read_text())
    scores = saved["results"]["BasicMotions"]["0"]
    streamed = {f"{part} alone {f}" for part in ("kernels", "network") for f in ("0.25", "0.5")}
    assert (
        set(scores)
        == {"0.25", "0.5", "1.0", "kernels alone", "network alone", "floor 0", "floor 1"} | streamed
    )
    assert scores["floor 0"] == pytest.approx(scores["1.0"])  # (fitted without the floor)
    assert scores["floor 1"] == pytest.approx(scores["network alone"])
    # BasicMotions' classes separate easily: the random kernels alone get most held-out series right
    assert 75.0 <= scores["kernels alone"] <= 100.0 and 0.0 <= scores["network alone"] <= 100.0
    # each of the 40 training series is held out once: accuracies are multiples of 100 / 40
    assert all(abs(v * 40 / 100 - round(v * 40 / 100)) < 1e-9 for v in scores.values())
    report = (tmp_path / "classification_validation.md").read_text()
    assert "| BasicMotions |" in report and "--param max_epochs=2" in report and "--floors 0 1" in report
    kernels_early = f"{scores['kernels alone 0.25']:.2f} ± 0.00 | {scores['kernels alone 0.5']:.2f} ± 0.00 |"
    assert f"| BasicMotions | kernels alone | {kernels_early}" in report


def test_peers_are_scored_on_the_folds_the_classifier_is_scored_on(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(0)
    X = [rng.normal(size=(2, int(n))) for n in rng.integers(9, 15, size=30)]
    y = np.repeat(np.array(["a", "b", "c"]), 10)
    seen: list[dict] = []

    def aeon_worker(cuts, seeds, peers, fractions, aeon_python):
        """Stands in for the aeon subprocess: 'MiniRocket' answers the held-out fold's first class."""
        seen.append(cuts)
        rows, curve = [], []
        for key, (_, _, _, y_held) in cuts.items():
            for peer in peers:
                if peer == "MultiRocket" and key.endswith("fold 1"):
                    continue  # (it failed on this fold)
                acc = 100.0 * float(np.mean(y_held == y_held[0]))
                rows.append([key, peer, seeds[0], acc, 0.1, 0.1, 0.0, 0.0])
            curve += [[key, "MiniRocket (trained per prefix)", seeds[0], f, 100.0 * f] for f in fractions]
        return rows, curve, ["MultiRocket failed on fold 1"], "aeon 0"

    monkeypatch.setattr(classification_validation, "run_peers", aeon_worker)
    accuracy, notes, version = classification_validation.peers_out_of_fold(
        {"toy": (X, y)}, [4, 5], 3, "py", (0.25, 0.5)
    )
    assert version == "aeon 0" and len(notes) == 2
    for seed, cuts in zip((4, 5), seen, strict=True):
        folds = classification_validation.fold_splits(y, seed, 3)
        held = np.concatenate([f[1] for f in folds])
        assert sorted(held.tolist()) == list(range(30))  # every series held out once
        for k, (fit_idx, held_idx) in enumerate(folds):
            X_fit, y_fit, X_held, y_held = cuts[f"toy fold {k}"]
            assert np.array_equal(y_held, y[held_idx]) and np.array_equal(y_fit, y[fit_idx])
            assert all(a is X[i] for a, i in zip(X_held, held_idx, strict=True))
            assert all(a is X[i] for a, i in zip(X_fit, fit_idx, strict=True))
        expected = sum(100.0 * np.mean(y[h] == y[h][0]) * len(h) / 30 for _, h in folds)
        assert accuracy["toy"]["MiniRocket"][seed] == pytest.approx(expected)
    assert "MultiRocket" not in accuracy["toy"]  # a peer missing a fold has no figure
    per_prefix = classification_validation.PER_PREFIX
    assert accuracy["toy"][f"{per_prefix} 0.25"] == pytest.approx({4: 25.0, 5: 25.0})
    by_seed = {s: {"0.25": 60.0, "0.5": 70.0, "1.0": 90.0} for s in (4, 5)}
    section = "\n".join(classification_validation._peer_section({"toy": by_seed}, (accuracy, notes, version)))
    assert "| toy | AarenClassifier | 90.00 ± 0.00 (90.00 / 90.00) |" in section
    both = "25.00 ± 0.00 (25.00 / 25.00) | 50.00 ± 0.00 (50.00 / 50.00)"
    assert f"| toy | {per_prefix} (aeon) | {both} |" in section
    assert "| toy | MultiRocket (aeon) | – |" in section


def test_early_peers_answer_the_held_out_series_of_the_same_folds(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in for aeon's subprocess: TEASER answers class "a" after 5 of the 20 steps, the other
    the true class at the end; every series is held out once and pooled, as the classifier's are."""
    rng = np.random.default_rng(1)
    X = [rng.normal(size=(1, 20)) for _ in range(24)]
    y = np.repeat(np.array(["a", "b"]), 12)
    held_out: list[np.ndarray] = []

    def aeon_worker(aeon_python, data, seed, base):
        _, _, X_held, y_held = data
        held_out.append(np.array([next(i for i, x in enumerate(X) if x is s) for s in X_held]))
        teaser = {"labels": ["a"] * len(y_held), "decided_at": [5] * len(y_held)}
        other = {"labels": list(y_held), "decided_at": [20] * len(y_held)}
        return {"models": {"TEASER": teaser, "ProbabilityThresholdEarlyClassifier": other}}

    monkeypatch.setattr(early_validation, "run_aeon", aeon_worker)
    figures = early_validation.aeon_out_of_fold(X, y, 3, 4, "py")
    assert sorted(np.concatenate(held_out).tolist()) == list(range(24))
    folds = classification_validation.fold_splits(y, 3, 4)
    assert all(np.array_equal(a, b) for a, (_, b) in zip(held_out, folds, strict=True))
    assert figures["TEASER"] == pytest.approx((0.5, 0.25, early_validation.harmonic_mean(0.5, 0.25)))
    assert figures["ProbabilityThresholdEarlyClassifier"][:2] == pytest.approx((1.0, 1.0))


def test_validation_on_a_resample_reads_its_training_part_only(shared_data_home: Path) -> None:
    from aaren_ts.datasets import load_uea

    kw = {"data_home": str(shared_data_home), "download_if_missing": False, "return_type": "list"}
    try:
        X_train, y_train = load_uea("BasicMotions", "train", **kw)
        X_test, y_test = load_uea("BasicMotions", "test", **kw)
    except FileNotFoundError:
        pytest.skip("BasicMotions is not in the data folder")
    X, y = classification_validation.training_part("BasicMotions", 3, False, str(shared_data_home))
    assert len(X) == len(X_train) and np.array_equal(y, y_train)  # without --resample: TRAIN
    X, y = classification_validation.training_part("BasicMotions", 3, True, str(shared_data_home))
    expected = _common.resample_split(X_train, y_train, X_test, y_test, 3)
    assert np.array_equal(y, expected[1]) and all(
        np.array_equal(a, b) for a, b in zip(X, expected[0], strict=True)
    )
    test_part = {x.tobytes() for x in expected[2]}
    assert not any(x.tobytes() in test_part for x in X)  # no series of the resample's test part
    assert any(x.tobytes() in {t.tobytes() for t in X_test} for x in X)  # TRAIN and TEST pooled


def test_mixture_rules_reproduce_the_classifier() -> None:
    """``classification_mixture.py``: from one fit without the floor, its ``as chosen`` rule is that
    classifier's answer and ``floor 0.5`` the defaults' (a classifier fitted with the floor), on series
    of unequal lengths (some answered by an earlier prefix length's map)."""
    import classification_mixture

    from aaren_ts import AarenClassifier
    from aaren_ts.estimators.classification._kernels import _running_means
    from aaren_ts.nn.ensemble import member_networks

    rng = np.random.default_rng(1)
    X = [rng.normal(size=(2, n)) + (i % 3) * 0.3 for i, n in enumerate(rng.integers(6, 20, size=36))]
    y = np.array(["a", "b", "c"] * 12)
    params = {"d_model": 8, "n_heads": 2, "n_layers": 1, "d_ff": 16, "max_epochs": 3}
    params |= {"n_random_features": 840, "random_state": 0}
    floored = AarenClassifier(**params).fit(X, y)
    with classification.no_whole_series_floor():
        unfloored = AarenClassifier(**params).fit(X, y)
    parts = classification_mixture.member_parts(unfloored, X)
    assert parts["network"].shape == (2, 36, 3) and 0 < parts["whole"].sum() < 36
    rules = classification_mixture.rule_answers(parts)
    np.testing.assert_allclose(rules["as chosen"], unfloored.predict_proba(X), atol=1e-6)
    np.testing.assert_allclose(rules["floor 0.5"], floored.predict_proba(X), atol=1e-6)
    assert not np.allclose(rules["as chosen"], rules["floor 0.5"])  # (the floor was raised here)
    assert not np.allclose(rules["weight 0"], rules["weight 1"])
    # the whole series' map: the same answers where it is the map in use, others on shorter series
    whole = parts["whole"]
    np.testing.assert_allclose(rules["whole map, floor 0.5"][whole], rules["floor 0.5"][whole], atol=1e-12)
    np.testing.assert_allclose(rules["whole map, weight 0"][whole], rules["weight 0"][whole], atol=1e-12)
    assert not np.allclose(rules["whole map, weight 0"][~whole], rules["weight 0"][~whole])
    # member 0's kernels with the whole series' map: its ridge map of the running means after each series
    member = member_networks(unfloored.net_.module_)[0]
    values, lengths = unfloored._scaled(unfloored._panel(X))
    means = _running_means(member, values, lengths[None])[0]
    n_maps = len(member.kernel_prefixes)
    weight = member.kernel_weight.numpy().reshape(n_maps, 3, -1)[-1]
    scores = member.kernel_gain.numpy()[-1] * (means @ weight.T + member.kernel_bias.numpy()[-1])
    expected = scores - np.logaddexp.reduce(scores, axis=1, keepdims=True)
    np.testing.assert_allclose(parts["kernels_whole"][0], expected, atol=1e-5)
