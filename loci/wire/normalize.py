"""The names of the score normalizations."""

from __future__ import annotations

from typing import Literal

NormalizationName = Literal["minmax", "zscore", "softmax"]
