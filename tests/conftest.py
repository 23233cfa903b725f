"""Shared test configuration: deterministic, quiet, and thread counts that suit 2-core CI workers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

# pytest-xdist runs 2 workers on 2 cores: one intra-op thread each avoids oversubscription.
if os.environ.get("PYTEST_XDIST_WORKER"):
    torch.set_num_threads(1)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip ``cuda``-marked tests, saying why, when no CUDA device is present."""
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device; none is available on this machine")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def shared_data_home() -> Path:
    """The folder with the real benchmark files (``$AAREN_TS_DATA``); skips when absent."""
    value = os.environ.get("AAREN_TS_DATA")
    if not value or not Path(value).is_dir():
        pytest.skip(
            "real benchmark data not found: set AAREN_TS_DATA to the folder holding "
            "ETT-small/, weather/ and Multivariate_ts/"
        )
    return Path(value)
