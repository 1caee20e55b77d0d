"""The common JSON format (a `Dataset` encoded with msgspec), and the default synthetic set.

`load_json(path)` reads any file in that format (what `write_synthetic` writes), and refuses any
other file with InvalidInput ("not a dataset file: ...");
`load_synthetic()` generates the default seeded set in memory, so nothing has to be on disk.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from engine.errors import InvalidInput
from evals.model import Dataset, decode_dataset
from evals.synthetic import SyntheticConfig, generate


def load_json(path: str | Path) -> Dataset:
    """A dataset file in the common format; any other file is InvalidInput naming it and what is wrong
    (not JSON, a JSON of another shape, a JSONL export), as an unknown dataset name is."""
    try:
        return decode_dataset(Path(path).read_bytes())
    except msgspec.DecodeError as exc:  # a ValidationError (the wrong shape) is one too
        raise InvalidInput(
            f"not a dataset file: {path}: {exc} (the common format is a Dataset as JSON, evals/model.py)",
            field="dataset",
        ) from exc


def load_synthetic(config: SyntheticConfig | None = None) -> Dataset:
    return generate(config or SyntheticConfig())
