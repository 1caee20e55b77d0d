"""Score normalizers, one per module, chosen by name (`minmax`, `zscore`, `softmax`).

A normalizer maps one channel's raw scores (a float64 vector over the channel's hits) to comparable
values. It never mutates its input, returns a new float64 array of the same length, and returns an
empty array for an empty input. An unknown name raises `engine.errors.UnknownName`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import numpy.typing as npt

from engine.errors import UnknownName
from engine.retrieval.normalize import minmax, softmax, zscore

# the API's wire records live in loci.wire (the client distribution ships it); re-exported here
from loci.wire.normalize import (  # isort: skip
    NormalizationName as NormalizationName,
)

Array = npt.NDArray[np.float64]
Normalizer = Callable[[Array], Array]

NORMALIZERS: Mapping[str, Normalizer] = {
    "minmax": minmax.normalize,
    "zscore": zscore.normalize,
    "softmax": softmax.normalize,
}


def get_normalizer(name: str) -> Normalizer:
    fn = NORMALIZERS.get(name)
    if fn is None:
        raise UnknownName("normalization", name, NORMALIZERS, field="retrieval.normalization")
    return fn


def normalize(name: str, raw: npt.ArrayLike) -> Array:
    return get_normalizer(name)(np.asarray(raw, dtype=np.float64))


__all__ = ["NORMALIZERS", "NormalizationName", "Normalizer", "get_normalizer", "normalize"]
