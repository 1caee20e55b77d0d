"""Token counting for the budget: exact BPE counts in the LLM's tokenizer, or an estimate.

`budget.tokenizer` chooses one (`get_tokenizer(name)`):
- `o200k_base` (default; GPT-4o, GPT-4.1, o-series) and `cl100k_base` (GPT-4, GPT-3.5): exact counts
  from `rs_bpe`, whose compiled extension carries OpenAI's BPE ranks (nothing is downloaded; its
  counts equal tiktoken's, see tests/engine/retrieval/test_tokens.py).
- `estimate`: `ceil(ascii_chars / 3) + non_ascii_chars`, no tokenizer at all: over English it counts
  more than o200k_base, but a character outside the BMP, an emoji sequence or a combining mark can be
  several BPE tokens, so it can count a few times fewer there; a budget that must hold for a model
  takes that model's encoding.

What the budget counts (`Tokenizer.line_tokens`): each rendered string of the context (a fact, an
event, a day header, a source, the summary) costs its own token count plus `LINE_OVERHEAD` (1) for
the newline that joins it to the next, i.e. the context as an LLM reads it, one string per line.
Counted line by line, the count is additive, so the budget can be filled line by line; the joined
text never counted more in our checks (a merge across a newline saves tokens; the property tests
check the joined count against the budget too). Counts are cached per text (memories repeat across
requests).

`count_pieces(pieces)` counts a long text made of pieces that recur (the summary's entries) without
reading it whole: both encodings' pre-tokenizers cut before every space that follows a non-space
character (a chunk holds a space only as its first character, or holds only whitespace), and the BPE
runs chunk by chunk, so pieces that meet at such a space count apart exactly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from functools import lru_cache

from engine.bounded import BoundedMap

# the API's wire records live in loci.wire (the client distribution ships it); re-exported here
from loci.wire.tokens import (  # isort: skip
    DEFAULT_TOKENIZER as DEFAULT_TOKENIZER,
    TOKENIZERS as TOKENIZERS,
    TokenizerName as TokenizerName,
)

LINE_OVERHEAD = 1
ELLIPSIS = "…"
CHARS_PER_TOKEN = 3.0  # the estimate's rate
METHOD = "ceil(ascii_chars/3) + non_ascii_chars, +1 per rendered line"
COUNT_CACHE_SIZE = 1 << 15  # texts whose count is remembered (about 10 MB of rendered lines)
CACHED_MAX_CHARS = 2000  # a rendered line is capped at 400 tokens; longer texts go to the small cache
#: longer texts (a request's turn, a context's summary) whose count is remembered: a summary is counted
#: as it is cut, then by the block and the response
LONG_CACHE_SIZE = 64
LONG_MAX_CHARS = 1 << 16  # longer than this: counted every time, never kept


def estimate(text: str) -> int:
    """The character heuristic: ceil(ascii_chars / 3) + non_ascii_chars."""
    if not text:
        return 0
    if text.isascii():
        return -(-len(text) // 3)
    non_ascii = len(text) - len(text.encode("ascii", "ignore"))  # counted in C: truncation calls this often
    return -(-(len(text) - non_ascii) // 3) + non_ascii


def _truncate(count: Callable[[str], int], text: str, max_tokens: int) -> str:
    """The longest prefix of `text` (cut at a word boundary when one is near, plus an ellipsis)
    whose count is <= max_tokens; "" when even the ellipsis does not fit."""
    if count(text) <= max_tokens:
        return text
    if max_tokens <= count(ELLIPSIS):
        return ""
    lo, hi = 0, len(text)
    # largest n with count(text[:n] + ELLIPSIS) <= max_tokens (BPE counts are monotone in practice;
    # the loop below makes the result fit even where they are not)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(text[:mid].rstrip() + ELLIPSIS) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    cut = text[:lo]
    space = cut.rfind(" ")
    if space >= max(1, int(lo * 0.8)):
        cut = cut[:space]
    out = cut.rstrip() + ELLIPSIS
    while count(out) > max_tokens and cut:
        cut = cut[:-1]
        out = cut.rstrip() + ELLIPSIS
    return out if count(out) <= max_tokens else ""


class Tokenizer:
    """Counts tokens of rendered lines under one method (`name`)."""

    name: str
    #: how the budget is counted, for `trace.budget.method`
    method: str

    def count(self, text: str) -> int:
        raise NotImplementedError

    def line_tokens(self, text: str) -> int:
        """Tokens a rendered line costs, its newline included (0 for an empty line: not rendered)."""
        return self.count(text) + LINE_OVERHEAD if text else 0

    def truncate(self, text: str, max_tokens: int) -> str:
        return _truncate(self.count, text, max_tokens)

    def count_pieces(self, pieces: Sequence[str]) -> int:
        """The count of `"".join(pieces)` (the estimate rounds per text, so it counts the joined text)."""
        return self.count("".join(pieces))


def _meet_at_a_cut(pieces: Sequence[str]) -> bool:
    """Whether each piece after the first starts with a space that follows a non-space character: where
    a BPE pre-tokenizer always cuts (`str.isspace` holds for every regex whitespace character)."""
    prev = pieces[0] if pieces else ""
    for piece in pieces[1:]:
        if not prev or prev[-1].isspace() or not piece.startswith(" "):
            return False
        prev = piece
    return True


class EstimateTokenizer(Tokenizer):
    name = "estimate"
    method = METHOD

    def count(self, text: str) -> int:
        return estimate(text)


class BpeTokenizer(Tokenizer):
    """Exact counts in one of OpenAI's BPE encodings (ranks compiled into `rs_bpe`)."""

    def __init__(self, name: str) -> None:
        from rs_bpe.bpe import openai

        self.name = name
        self.method = f"{name} BPE tokens of each rendered line, +1 per line (its newline)"
        self._bpe = getattr(openai, name)()
        self._cached = lru_cache(maxsize=COUNT_CACHE_SIZE)(self._count)
        self._long: BoundedMap[str, int] = BoundedMap(LONG_CACHE_SIZE)

    def _count(self, text: str) -> int:
        return int(self._bpe.count(text)) if text else 0

    def count(self, text: str) -> int:
        if len(text) <= CACHED_MAX_CHARS:
            return int(self._cached(text))
        if len(text) > LONG_MAX_CHARS:
            return self._count(text)
        return self._remembered(text, self._count)

    def count_pieces(self, pieces: Sequence[str]) -> int:
        """The count of `"".join(pieces)`: the pieces' cached counts summed where they meet where the
        pre-tokenizer cuts (the module docstring), else the joined text counted. A long joined text's
        count is remembered, so counting it again costs nothing."""
        text = "".join(pieces)
        if len(text) <= CACHED_MAX_CHARS or len(text) > LONG_MAX_CHARS or not _meet_at_a_cut(pieces):
            return self.count(text)
        return self._remembered(text, lambda _: sum(self.count(piece) for piece in pieces))

    def _remembered(self, text: str, counted: Callable[[str], int]) -> int:
        """A long text's count from the long-text cache, else `counted(text)`, kept there."""
        found = self._long.get(text)
        if found is None:
            found = counted(text)
            self._long.put(text, found)
        return found


#: the estimate, and the default of every function that takes a tokenizer
ESTIMATE = EstimateTokenizer()
_LOCK = threading.Lock()
_LOADED: dict[str, Tokenizer] = {"estimate": ESTIMATE}


def get_tokenizer(name: str = DEFAULT_TOKENIZER) -> Tokenizer:
    """The tokenizer called `name` (loaded once per process: a BPE one takes a moment to load)."""
    found = _LOADED.get(name)
    if found is not None:
        return found
    if name not in TOKENIZERS:
        from engine.errors import UnknownName

        raise UnknownName("tokenizer", name, TOKENIZERS, field="budget.tokenizer")
    with _LOCK:
        if name not in _LOADED:
            _LOADED[name] = BpeTokenizer(name)
        return _LOADED[name]


# the estimate as plain functions (the entity summary and older callers use these)
line_tokens = ESTIMATE.line_tokens
truncate = ESTIMATE.truncate
