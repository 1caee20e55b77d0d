"""The common JSON format (a `Dataset` encoded with msgspec), and the default synthetic set.

`load_json(path)` reads any file in that format (what `write_synthetic` writes);
`load_synthetic()` generates the default seeded set in memory, so nothing has to be on disk.
"""

from __future__ import annotations

from pathlib import Path

from evals.model import Dataset, decode_dataset
from evals.synthetic import SyntheticConfig, generate


def load_json(path: str | Path) -> Dataset:
    return decode_dataset(Path(path).read_bytes())


def load_synthetic(config: SyntheticConfig | None = None) -> Dataset:
    return generate(config or SyntheticConfig())
