"""The keyword channel's tokenizer, one for every backend (the local index tokenizes on load, PostgreSQL
stores each memory's `terms` in a column on write), so both rank the same terms.

Bring the text to one spelling per visible word (`normal`: Unicode's NFKC composition, so "e" and a
combining accent are "é" and full-width "ＡＣＭＥ" is "ACME"; the invisible joiners and the soft hyphen
dropped, so they do not split a word, while a zero-width space, a word break by definition, still
does; case folded, so "Straße" is "strasse"), take the `\\w+` runs (Unicode word characters: letters,
digits, underscore), drop the English stop words `STOPWORDS` (the Snowball list PostgreSQL's `english`
dictionary uses: "what", "did", "when", ... say nothing about a memory), and reduce each word to its
Snowball English stem ("painting", "painted" -> "paint"; "kids" -> "kid"), so a question finds the
memory whatever the word form. Query and documents use the same function, so a query that is only
stop words matches nothing.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from functools import lru_cache

import Stemmer

_WORD = re.compile(r"\w+")

_STOPWORD_TEXT = (
    "i me my myself we our ours ourselves you your yours yourself yourselves he him his himself she her "
    "hers herself it its itself they them their theirs themselves what which who whom this that these "
    "those am is are was were be been being have has had having do does did doing a an the and but if or "
    "because as until while of at by for with about against between into through during before after "
    "above below to from up down in out on off over under again further then once here there when where "
    "why how all any both each few more most other some such no nor not only own same so than too very s "
    "t can will just don should now"
)
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split(" "))
_LOCAL = threading.local()  # a Stemmer instance is not thread-safe: one per thread


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    stemmer = getattr(_LOCAL, "stemmer", None)
    if stemmer is None:
        stemmer = _LOCAL.stemmer = Stemmer.Stemmer("english")
    return str(stemmer.stemWord(word))


#: inside a word they join or hyphenate, they do not separate: soft hyphen, zero-width non-joiner and
#: joiner, word joiner, zero-width no-break space
_INVISIBLE = dict.fromkeys((0x00AD, 0x200C, 0x200D, 0x2060, 0xFEFF))


def normal(text: str) -> str:
    """`text` as the tokenizer reads it: NFKC, without the invisible joiners, case folded."""
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFKC", text).translate(_INVISIBLE).casefold()


def tokenize(text: str) -> list[str]:
    return [stem(t) for t in _WORD.findall(normal(text)) if t not in STOPWORDS]


def terms(text: str) -> list[str]:
    """A document's terms as a backend stores them: its tokens, repeats kept (the term frequencies),
    sorted (their order does not matter to BM25)."""
    return sorted(tokenize(text))
