"""Datasets by name: `locomo`, `longmemeval-oracle`, `longmemeval-ku` (its 78 knowledge-update
questions), `longmemeval-s-dev` (the S setting's development split, full haystacks), `synthetic` (the
default seeded set), `synthetic-mixed` (facts, notes, documents and events of one person together,
`evals.synthetic_mixed`), or a path to a JSON file in the common format.

    load_dataset("locomo") -> Dataset
    load_dataset("runs/my-scenarios.json") -> Dataset
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from engine.errors import InvalidInput, UnknownName
from evals.loaders.locomo import load_locomo
from evals.loaders.longmemeval import S_DEV_PATH, load_longmemeval
from evals.loaders.synthetic import load_json, load_synthetic
from evals.model import Dataset
from evals.synthetic_mixed import generate_mixed

LOADERS: dict[str, Callable[[], Dataset]] = {
    "locomo": load_locomo,
    "longmemeval-oracle": load_longmemeval,
    "longmemeval-ku": lambda: load_longmemeval(question_types=("knowledge-update",)),
    "longmemeval-s-dev": lambda: load_longmemeval(S_DEV_PATH, name="longmemeval-s-dev"),
    "synthetic": load_synthetic,
    "synthetic-mixed": generate_mixed,
}


def dataset_names() -> list[str]:
    return sorted(LOADERS)


def load_dataset(name_or_path: str | Path) -> Dataset:
    """A registered dataset by name, or a common-format JSON file by path. An unknown name that
    is not an existing file raises `UnknownName` listing the valid names; a path (a `/` in it, or
    ending `.json`) to no file, `InvalidInput` ("no such file: ..."); a file that is not in the
    common format, `InvalidInput` ("not a dataset file: ...")."""
    key = str(name_or_path)
    if key in LOADERS:
        return LOADERS[key]()
    path = Path(key)
    if path.is_file():
        return load_json(path)
    if "/" in key or key.endswith(".json"):  # meant as a path: listing the names would mislead
        problem = f"not a dataset file: {key}: a directory" if path.is_dir() else f"no such file: {key}"
        raise InvalidInput(problem, field="dataset")
    raise UnknownName("dataset", key, [*LOADERS, "<path to a .json file>"], field="dataset")


__all__ = [
    "LOADERS",
    "dataset_names",
    "load_dataset",
    "load_json",
    "load_locomo",
    "load_longmemeval",
    "load_synthetic",
]
