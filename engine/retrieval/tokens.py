"""Token estimation for the budget: a conservative character heuristic (no tokenizer is installed).

    tokens(text) = ceil(ascii_chars / 3) + non_ascii_chars

English averages about 4 characters per token with GPT-style BPE tokenizers, so 3 characters per
token over-counts typical prose by about a third (numbers, ids and punctuation tokenize worse than
prose, hence the margin). A non-ASCII character (CJK, accents, emoji) is counted as one token each.
Each rendered line also costs `LINE_OVERHEAD` token for its separator (newline / bullet).

The estimate is additive over lines, so the budget can be checked exactly, and monotone in text
length, so truncation can binary-search a prefix.
"""

from __future__ import annotations

CHARS_PER_TOKEN = 3.0
LINE_OVERHEAD = 1
METHOD = "ceil(ascii_chars/3) + non_ascii_chars, +1 per rendered line"
ELLIPSIS = "…"


def estimate(text: str) -> int:
    if not text:
        return 0
    if text.isascii():
        return -(-len(text) // 3)
    non_ascii = len(text) - len(text.encode("ascii", "ignore"))  # counted in C: truncation calls this often
    return -(-(len(text) - non_ascii) // 3) + non_ascii


def line_tokens(text: str) -> int:
    """Tokens a rendered line costs, separator included (0 for an empty line: it is not rendered)."""
    return estimate(text) + LINE_OVERHEAD if text else 0


def truncate(text: str, max_tokens: int) -> str:
    """The longest prefix of `text` (cut at a word boundary when one is near, plus an ellipsis) whose
    estimate is <= max_tokens. Returns "" when even the ellipsis does not fit."""
    if estimate(text) <= max_tokens:
        return text
    if max_tokens <= estimate(ELLIPSIS):
        return ""
    lo, hi = 0, len(text)
    # largest n with estimate(text[:n] + ELLIPSIS) <= max_tokens
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate(text[:mid].rstrip() + ELLIPSIS) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    cut = text[:lo]
    space = cut.rfind(" ")
    if space >= max(1, int(lo * 0.8)):
        cut = cut[:space]
    return cut.rstrip() + ELLIPSIS
