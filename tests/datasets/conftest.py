"""Fixtures of the dataset tests: an isolated verification cache, and writers of upstream-format files."""

from __future__ import annotations

import pytest

from aaren_ts.datasets import _integrity


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep checksum-verification records out of the user's cache folder, and forget earlier ones."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("cache")))
    monkeypatch.setattr(_integrity, "_memory", {})
