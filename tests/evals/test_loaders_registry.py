from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import InvalidInput, UnknownName
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


@pytest.mark.parametrize("name", ["/missing.json", "runs/mine", "mine.json"])
def test_a_path_to_no_file_says_so(name: str) -> None:
    """`--dataset /missing.json` said "unknown dataset" and listed the names."""
    with pytest.raises(InvalidInput) as err:
        load_dataset(name)
    assert err.value.message == f"no such file: {name}" and err.value.field == "dataset"
    assert not isinstance(err.value, UnknownName)


def test_a_directory_is_not_a_dataset_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=f"^not a dataset file: {tmp_path}: a directory$"):
        load_dataset(str(tmp_path))


def test_by_name() -> None:
    assert len(load_dataset("longmemeval-ku").questions) == 78
    assert load_dataset("synthetic").name == "synthetic-s0"
    assert len(load_dataset("locomo").conversations) == 10


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("{not json", "JSON is malformed"),
        ('{"name": "x"}', "Object missing required field `conversations`"),
        ('{"kind":"header"}\n{"kind":"memory"}\n', "Object missing required field `name`"),  # a JSONL export
        ("", "Input data was truncated"),
    ],
)
def test_a_file_that_is_not_a_dataset_is_refused_naming_it(tmp_path: Path, text: str, problem: str) -> None:
    """A malformed file, or JSON of another shape (an export), left msgspec's error as a traceback."""
    path = tmp_path / "mine.json"
    path.write_text(text)
    with pytest.raises(InvalidInput, match=f"^not a dataset file: {path}: ") as err:
        load_dataset(str(path))
    assert problem in err.value.message and err.value.field == "dataset"
