"""The attack suite's quick form (``python benchmarks/attack.py --quick``): one or two cases of each of its
categories, as a careless or hostile user would try them, each refused clearly or handled correctly;
none obscure, silently wrong, a crash, or losing state."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

import attack  # noqa: E402

FAILURES = ("obscure", "silent wrong", "crash", "state lost")


@pytest.mark.slow
def test_the_quick_attack_finds_nothing(tmp_path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "attack.py"), "--quick", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    record = json.loads((tmp_path / "attack.json").read_text())
    assert record["quick"] and (tmp_path / "attack.md").exists()
    ran = {category: counts["cases"] for category, counts in record["categories"].items()}
    assert ran == {category: len(names) for category, names in attack.QUICK.items()}  # every case ran
    failed = [case for case in record["cases"] if case["outcome"] in FAILURES]
    assert all(record["total"][outcome] == 0 for outcome in FAILURES), failed
    assert record["total"]["clear"] + record["total"]["correct"] == record["total"]["cases"]


def test_quick_names_cases_that_exist_in_every_category(tmp_path, monkeypatch) -> None:
    assert list(attack.QUICK) == list(attack.CASES) == list(attack.CATEGORIES)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # (the folders some categories make)
    fixtures = attack.Fixtures(tmp_path / "unused", quick=True)  # listing the cases loads nothing
    for category, names in attack.QUICK.items():
        cases = attack.CASES[category](fixtures)
        assert 1 <= len(names) <= 6 and set(names) <= set(cases), category
