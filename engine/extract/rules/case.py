"""Names typed in lower case: a writer whose only capitals are sentences' first letters and "I"
("i live in paris", "my name is sam") gets the names the rules can tell capitalized before extraction,
since the fact patterns read a value as a name by its capital.

    writes_names_in_lower_case("i moved to berlin") -> True
    restore_names("i moved to berlin in june") -> "i moved to Berlin in June"
"""

from __future__ import annotations

import re

from engine.extract.rules.clauses import RELATIONS
from engine.extract.rules.entities import LANGUAGES, NATIONALITIES, ORGS, PLACES, PRODUCTS
from engine.extract.rules.text import word_set
from engine.letters import UPPER
from engine.storage.tokenize import STOPWORDS

#: lexicon names that are also everyday words: a text typed in lower case keeps them as typed
_EVERYDAY_HOMOGRAPHS = frozenset(
    ("target", "switch", "pixel", "galaxy", "civic", "meta", "apple", "turkey", "stripe", "cork",
     "lima", "chile", "polish", "sap", "eth", "us", "the us")
)  # fmt: skip
#: month and day names end a value as a date does ("moved to seattle in june"); "may" is a verb
_CALENDAR = word_set(
    "January February March April June July August September October November December "
    "Monday Tuesday Wednesday Thursday Friday Saturday Sunday"
)
#: short forms a lower-case writer types for places and organizations the lexicons name in full
_SHORT_FORMS = word_set("NYC SF NASA")
_CASED = {
    name.lower(): name
    for name in sorted(
        PLACES | ORGS | PRODUCTS | LANGUAGES | NATIONALITIES | _CALENDAR | _SHORT_FORMS, key=str.swapcase
    )
    if name.lower() not in _EVERYDAY_HOMOGRAPHS
}
#: a word as the lexicons' keys are cut: "new york city" is three, "paris's" one
_WORD = re.compile(r"\w+(?:['-]\w+)*")
_LONGEST_KEY = max(len(k.split()) for k in _CASED)
_FIRST_WORDS = frozenset(k.split()[0] for k in _CASED)
#: a word a lower-case writer gives as a name: "my name is sam", "a dog named biscuit", "call me jo"
_NAMED_LOWER = re.compile(
    r"\b(?:name is|names is|call me|go by|goes by|named|(?:is|was|are|were|s) called) (?P<w>[a-z][a-z'-]{1,40})\b"
)
#: a capital a lower-case writer still types: a sentence's first letter, the pronoun I
_EXPECTED_CAPITAL = re.compile(rf"(?:^\s*|[.!?:]\s+)[\"'(\[]*{UPPER}|\bI\b", re.MULTILINE)
#: "my husband tom works ...", "my daughter lily is 5", "my friend sam, who": a relation, then a word
#: the clause goes on from as from its subject, is the relation's name
_RELATION_LOWER = re.compile(
    r"\bmy (?:" + "|".join(sorted((*RELATIONS, "dog", "cat", "boss"), key=len, reverse=True)) + r") "
    r"(?P<w>[a-z][a-z'-]{1,40})(?= (?:is|was|works|worked|lives|lived|has|had|and i|who|just|turned|moved|got|"
    r"loves|likes|said|says)\b|\s*,)"
)
_NOT_NAMES = word_set(
    "not no very really just so too quite kind sort pretty also still actually definitely literally basically "
    "like what that this going gonna always never usually often sometimes finally recently lately now then "
    "again here there today yesterday tomorrow tonight lol haha"
)


def writes_names_in_lower_case(text: str) -> bool:
    """Whether `text` has letters and no capital beyond a sentence's first letter and the pronoun I."""
    rest = _EXPECTED_CAPITAL.sub(" ", text)
    return rest == rest.lower() and rest.upper() != rest.lower()


def _known_names(text: str) -> str:
    """`text` with each run of up to `_LONGEST_KEY` words the lexicons name, longest first, as they spell it
    (a walk over the words with dictionary look-ups: one regex of every name is a slow alternation)."""
    words = [(m.start(), m.end()) for m in _WORD.finditer(text)]
    out: list[str] = []
    done = i = 0
    while i < len(words):
        if text[words[i][0] : words[i][1]] not in _FIRST_WORDS:
            i += 1
            continue
        for n in range(min(_LONGEST_KEY, len(words) - i), 0, -1):
            start, end = words[i][0], words[i + n - 1][1]
            cased = _CASED.get(text[start:end])
            if cased is not None:
                out += (text[done:start], cased)
                done, i = end, i + n
                break
        else:
            i += 1
    return "".join(out) + text[done:]


def restore_names(text: str) -> str:
    """`text` from a writer who types names in lower case with the names the lexicons know, the word
    after "my name is" / "named" / "called" and a relation's name ("my wife anna is") capitalized."""
    text = _known_names(text)

    def _capitalize(m: re.Match[str]) -> str:
        word = m.group("w")
        if word in _NOT_NAMES or word in STOPWORDS:
            return m.group()
        return m.group()[: m.start("w") - m.start()] + word[:1].upper() + word[1:]

    return _RELATION_LOWER.sub(_capitalize, _NAMED_LOWER.sub(_capitalize, text))
