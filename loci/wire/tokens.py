"""The names of the tokenizers a budget is counted in."""

from __future__ import annotations

from typing import Literal

TokenizerName = Literal["o200k_base", "cl100k_base", "estimate"]
TOKENIZERS: tuple[TokenizerName, ...] = ("o200k_base", "cl100k_base", "estimate")
DEFAULT_TOKENIZER: TokenizerName = "o200k_base"
