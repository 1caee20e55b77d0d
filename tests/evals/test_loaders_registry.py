from __future__ import annotations

import pytest

from engine.errors import UnknownName
from evals.loaders import dataset_names, load_dataset


def test_names() -> None:
    assert dataset_names() == [
        "locomo",
        "longmemeval-ku",
        "longmemeval-oracle",
        "longmemeval-s-dev",
        "synthetic",
        "synthetic-mixed",
    ]


def test_unknown_name_lists_valid_ones() -> None:
    with pytest.raises(UnknownName) as err:
        load_dataset("locomo-2")
    assert "longmemeval-oracle" in str(err.value) and "synthetic" in str(err.value)


def test_by_name() -> None:
    assert len(load_dataset("longmemeval-ku").questions) == 78
    assert load_dataset("synthetic").name == "synthetic-s0"
    assert len(load_dataset("locomo").conversations) == 10
