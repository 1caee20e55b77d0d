"""The keyword channel's tokenizer, one for every backend (the local index tokenizes on load, PostgreSQL
stores each memory's `terms` in a column on write), so both rank the same terms.

Bring the text to one spelling per visible word (`normal`: Unicode's NFKC composition, so "e" and a
combining accent are "é" and full-width "ＡＣＭＥ" is "ACME"; the invisible joiners and the soft hyphen
dropped, so they do not split a word, while a zero-width space, a word break by definition, still
does; case folded, so "Straße" is "strasse"), then cut it into terms (`_TERM`):

- a word: a run of Unicode word characters (letters, digits, underscore) with the combining marks
  that belong to it (Indic and Thai vowel signs and viramas: "दिल्ली" is one term, not "द", "ल", "ल");
- a run of Han, Hiragana, Katakana or Hangul, written without spaces between words: its overlapping
  character bigrams ("绿茶很好" -> "绿茶", "茶很", "很好"), or the character itself for a run of one, as
  Lucene's CJK analyzer does, so a word inside a sentence is a term of it;
- an emoji or pictographic symbol, with its skin tone and the emoji it is joined to by ZWJ ("👩‍💻"),
  or a flag (two regional indicators): one term each, in a text with no other term, so a memory that
  is only emoji has terms (among words an emoji decorates: "Great news 🎉" has the terms of its words).

Drop the English stop words `STOPWORDS` (the Snowball list PostgreSQL's `english` dictionary uses:
"what", "did", "when", ... say nothing about a memory) and reduce each word to its Snowball English stem
("painting", "painted" -> "paint"; "kids" -> "kid"), so a question finds the memory whatever the word
form. Query and documents use the same function, so a query that is only stop words matches nothing.
A text without combining marks, CJK or pictographs (English, say) has words only, cut by `\\w+` alone.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from functools import lru_cache

import Stemmer

from engine.letters import MARKS, MARKS_BEYOND

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


#: inside a word they join or hyphenate, they do not separate: soft hyphen, zero-width non-joiner, word
#: joiner, zero-width no-break space (and the zero-width joiner, but in an emoji sequence: `_DROP`); the
#: variation selectors (text or emoji style: "☕" and "☕️" are one symbol)
_HIDDEN = "\u00ad\u200c\u2060\ufeff\ufe00-\ufe0f\U000e0100-\U000e01ef"


# Each class comes in two parts, the Basic Multilingual Plane and beyond: `re` tests a class wholly
# within the BMP by a table lookup, one with a range beyond it range by range.

#: scripts written without spaces between words: Hangul Jamo, CJK radicals, the ideographic iteration
#: and number marks, Hiragana, Katakana (not its middle dot, a separator), Hangul compatibility Jamo,
#: CJK ideographs (extension A, unified, compatibility; extensions B and beyond), Hangul syllables,
#: half-width Katakana
_CJK = (
    "\u1100-\u11ff\u2e80-\u2fdf\u3005-\u3007\u3021-\u3029\u3038-\u303c\u3041-\u3096\u3099-\u309f"
    "\u30a1-\u30fa\u30fc-\u30ff\u3131-\u318e\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f"
    "\uac00-\ud7ff\uf900-\ufaff\uff66-\uff9f"
)
_CJK_BEYOND = "\U00020000-\U0003ffff"
#: emoji and pictographic symbols: the emoji of the Latin-1, punctuation, arrows, technical, geometric
#: and supplemental arrows blocks, the Miscellaneous Symbols and Dingbats blocks; beyond: the emoji
#: blocks (mahjong tiles to Symbols and Pictographs Extended-A) but the regional indicators and skin tones
_PICT = (
    "\u00a9\u00ae\u203c\u2049\u2194-\u2199\u21a9\u21aa\u231a\u231b\u2328\u23cf\u23e9-\u23f3"
    "\u23f8-\u23fa\u25aa\u25ab\u25b6\u25c0\u25fb-\u25fe\u2600-\u27bf\u2934\u2935\u2b05-\u2b07"
    "\u2b1b\u2b1c\u2b50\u2b55\u3030\u303d"
)
_PICT_BEYOND = "\U0001f000-\U0001f1e5\U0001f200-\U0001f3fa\U0001f400-\U0001faff"
_ONE_PICT = f"(?:[{_PICT}]|[{_PICT_BEYOND}])"
#: what may follow a pictograph in its sequence: a skin tone, the keycap, tag characters (subdivision
#: flags)
_PICT_MOD = "\U0001f3fb-\U0001f3ff\u20e3\U000e0020-\U000e007f"
_EMOJI = (
    f"{_ONE_PICT}[{_PICT_MOD}]*(?:\u200d{_ONE_PICT}[{_PICT_MOD}]*)*"
    "|[\U0001f1e6-\U0001f1ff]{1,2}|[#*0-9]\u20e3"
)
_MARKS, _MARKS_BEYOND = MARKS, MARKS_BEYOND
_WORD_CHAR = f"[^\\W{_CJK}{_CJK_BEYOND}]"
_TERM = re.compile(
    f"{_WORD_CHAR}(?:{_WORD_CHAR}|[{_MARKS}]|[{_MARKS_BEYOND}])*"
    f"|(?P<cjk>(?:[{_CJK}]|[{_CJK_BEYOND}])+)|(?P<emoji>{_EMOJI})"
)
#: a text without any of these has words only, the plain `\\w+` runs
_NOT_WORDS_ONLY = re.compile(f"[{_MARKS}{_CJK}{_PICT}]|[\U00010000-\U0010ffff]")
#: the characters of `_HIDDEN`, and a zero-width joiner unless it joins two pictographs
_DROP = re.compile(
    f"[{_HIDDEN}]|(?<![{_PICT}\ufe0f])(?<![{_PICT_BEYOND}{_PICT_MOD}])\u200d|\u200d(?!{_ONE_PICT})"
)


def normal(text: str) -> str:
    """`text` as the tokenizer reads it: NFKC, without the invisible joiners and variation selectors,
    case folded."""
    if text.isascii():
        return text.lower()
    return _DROP.sub("", unicodedata.normalize("NFKC", text)).casefold()


def _terms_of(text: str) -> list[str]:
    """The terms of a `normal` text with combining marks, CJK or pictographs. Pictographs are terms only
    of a text with no other term: among words they decorate (the same smiley on many turns of a chat
    would match them all), alone they are what the text says."""
    out: list[str] = []
    pictographs: list[str] = []
    for m in _TERM.finditer(text):
        t = m.group()
        if m.group("cjk") is not None:
            out.extend([t] if len(t) == 1 else [t[i : i + 2] for i in range(len(t) - 1)])
        elif m.group("emoji") is not None:
            pictographs.append(t)
        elif t not in STOPWORDS:
            out.append(stem(t))
    return out or pictographs


def tokenize(text: str) -> list[str]:
    text = normal(text)
    if text.isascii() or not _NOT_WORDS_ONLY.search(text):
        return [stem(t) for t in _WORD.findall(text) if t not in STOPWORDS]
    return _terms_of(text)


def terms(text: str) -> list[str]:
    """A document's terms as a backend stores them: its tokens, repeats kept (the term frequencies),
    sorted (their order does not matter to BM25)."""
    return sorted(tokenize(text))
