"""Text helpers of the rule extractor: sentence splitting, contraction expansion, the filters that
drop sentences stating nothing (questions, hypotheticals, reported opinions), slugs and clean-up."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

from engine.letters import LETTER, UPPER

#: no split after a title's abbreviation ("Mrs. Johnson", "Dr. Lee")
_SENT_SPLIT = re.compile(
    r"(?<=[.!?])(?<!\bMr\.)(?<!\bMrs\.)(?<!\bMs\.)(?<!\bDr\.)(?<!\bSt\.)(?<!\bJr\.)(?<!\bSr\.)"
    rf"\s+(?=[0-9\"']|{UPPER})|\n+|;\s+"
)

_CONTRACTIONS: tuple[tuple[str, str], ...] = (
    # typed without the apostrophe; only words that are no other word ("im" but not "ill", "id", "its")
    (r"\b(?-i:[Ii]m)\b", "I am"),
    (r"\b(?-i:[Ii]ve)\b", "I have"),
    (r"\bcant\b", "can not"),
    (r"\b(do|does|did|is|are|was|were|has|have|had)nt\b", r"\1 not"),
    (r"\bI'm\b", "I am"),
    (r"\bI've\b", "I have"),
    (r"\bI'll\b", "I will"),
    (r"\bI'd\b", "I would"),
    (r"\bwe're\b", "we are"),
    (r"\bwe've\b", "we have"),
    (r"\bcan't\b", "can not"),
    (r"\bcannot\b", "can not"),
    (r"\bwon't\b", "will not"),
    (r"\b(\w+)n't\b", r"\1 not"),
    (r"\b(he|she|it|that|there|what|where)'s\b", r"\1 is"),
    (
        r"\b(my (?:\w+ )?(?:name|birthday|email|number|budget|goal|plan|rent|salary|job|title|age))'s\b",
        r"\1 is",
    ),
)
_CONTRACTION_RES = tuple((re.compile(p, re.IGNORECASE), r) for p, r in _CONTRACTIONS)
_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})


_SPACES = re.compile(r"\s+")
#: control characters (NUL, ESC, ...) and invisible spaces (zero-width space, word joiner, BOM): they
#: part words as a space does and are no part of a value
_INVISIBLE = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f\u200b\u2060\ufeff]")


#: an escape left in pasted JSON or code ("I live in Berlin\\nI work at Google"): a line break, a tab, a
#: quote; not the start of a word ("C:\\notes")
_ESCAPES = re.compile(r'\\(?:r\\n|n|r)(?![a-z])|\\t(?![a-z])|\\(?=["\'])')
_ESCAPED = {"\\t": " ", "\\": ""}
#: HTML tags that end a line ("<p>", "<br/>", "</li>") and tags inside one ("<b>", "</a>")
_BLOCK_TAG = re.compile(
    r"</?(?:p|div|br|li|ul|ol|dl|dt|dd|tr|td|th|table|h[1-6]|hr|blockquote|pre|section|article|header|"
    r"footer|main|nav|aside)(?:\s[^<>\n]{0,300})?/?>",
    re.IGNORECASE,
)
_INLINE_TAG = re.compile(
    r"</?(?:a|b|i|u|s|em|strong|span|small|big|code|kbd|mark|sup|sub|font|label|abbr|cite|q)"
    r"(?:\s[^<>\n]{0,300})?/?>",
    re.IGNORECASE,
)
_HTML_ENTITIES = {
    "&amp;": "&",
    "&quot;": '"',
    "&#39;": "'",
    "&apos;": "'",
    "&lt;": "<",
    "&gt;": ">",
    "&nbsp;": " ",
}
_HTML_ENTITY = re.compile("|".join(_HTML_ENTITIES))
#: markdown around words ("**Google**", "_Lyon_", "`Acme`", "[Google](https://...)"): the words are
#: what was said; a mark inside a word ("E*Trade", "snake_case", "it`s") is no markup
_MD_LINK = re.compile(r"\[([^\[\]\n]{1,300})\]\([^()\s]{0,2000}\)")
_MD_SPANS = tuple(
    re.compile(
        rf"(?<![\w{m}]){re.escape(d)}(?=[^\s{m}])([^{m}\n]{{1,300}}?)(?<=[^\s{m}]){re.escape(d)}(?![\w{m}])"
    )
    for d, m in (("**", r"\*"), ("__", "_"), ("*", r"\*"), ("_", "_"), ("`", "`"))
)
#: CJK and full-width punctuation as the ASCII mark it is, with the space a sentence or a clause needs
#: after it ("Berlin。", "Berlin，and ..."); quotation marks of other languages as straight quotes
_MARKS = str.maketrans(
    {
        "\u3002": ". ", "\uff0e": ". ", "\uff0c": ", ", "\u3001": ", ", "\uff01": "! ", "\uff1f": "? ",
        "\uff1b": "; ", "\uff1a": ": ", "\uff08": " (", "\uff09": ") ", "\u3010": " [", "\u3011": "] ",
        "\u300c": '"', "\u300d": '"', "\u300e": '"', "\u300f": '"', "\u00ab": '"', "\u00bb": '"',
        "\u2039": "'", "\u203a": "'", "\u201e": '"', "\u201a": "'", "\u2026": "...",
    }
)  # fmt: skip


def plain_text(text: str) -> str:
    """The words of a text as the rules read them: composed (NFC: "Jose" + U+0301 is "José"), pasted
    escapes, HTML tags and markdown marks taken off the words they wrap, CJK and full-width punctuation
    and guillemets as their ASCII marks. Sentences are then split from this text."""
    text = unicodedata.normalize("NFC", text)
    if "\\" in text:
        text = _ESCAPES.sub(lambda m: _ESCAPED.get(m.group(), "\n"), text)
    if "<" in text:
        text = _INLINE_TAG.sub("", _BLOCK_TAG.sub("\n", text))
    if "&" in text:
        text = _HTML_ENTITY.sub(lambda m: _HTML_ENTITIES[m.group()], text)
    if "](" in text:
        text = _MD_LINK.sub(r"\1", text)
    for span in _MD_SPANS:
        text = span.sub(r"\1", text)
    return text.translate(_MARKS)


#: the pronoun typed in lower case ("i moved", "i'm"); not a letter of "i.e." or a list's "i)"
_LOWER_I = re.compile(r"(?<![\w.'\-])i(?=\s|'|$)")


def normalize_text(text: str) -> str:
    """Runs of any whitespace (control characters and invisible spaces too) as one space, straight
    quotes, no emoji or emoticon at the end, the pronoun "i" as "I", contractions expanded (also typed
    without the apostrophe: "im", "dont"). Case is otherwise kept."""
    text = _SPACES.sub(" ", _INVISIBLE.sub(" ", text)).strip().translate(_QUOTES)
    closing = _CHAT_MARKS.search(text, max(0, len(text) - TRAILER_WINDOW))
    if closing:  # an emoji or emoticon closing the sentence is its tone ("I am 31 years old 🎂")
        text = text[: closing.start()]
    text = _LOWER_I.sub("I", text)
    for pattern, repl in _CONTRACTION_RES:
        text = pattern.sub(repl, text)
    return text


def word_set(text: str) -> frozenset[str]:
    """The words of a space-separated list, as a set."""
    return frozenset(text.split())


#: a sentence typed in lower case starts after [.!?] and a space too ("I moved to Lyon! so happy")
_LOWER_START = re.compile(r"(?<=[.!?])\s++(?=[a-z])")
#: words whose dot ends no sentence before a lower-case word ("e.g. apples", "approx. five")
_ABBREVIATIONS = word_set(
    "mr mrs ms mx dr st jr sr prof mt ft vs etc eg ie cf ca approx incl esp dept fig vol ch pp "
    "inc ltd co corp ave rd blvd jan feb apr aug sep sept oct nov dec"
)


def _ends_sentence(text: str, at: int) -> bool:
    """Whether the [.!?] before `at` ends a sentence: not the dot of an abbreviation, an initial ("J.")
    or a dotted short form ("a.m.", "U.S."). Looks back a bounded window: linear splitting."""
    if text[at - 1] != ".":
        return True
    words = text[max(0, at - 24) : at - 1].split()
    word = words[-1] if words else ""
    return len(word) > 1 and "." not in word and word.lower() not in _ABBREVIATIONS


def _lower_starts(part: str) -> list[str]:
    out: list[str] = []
    start = 0
    for m in _LOWER_START.finditer(part):
        if _ends_sentence(part, m.start()):
            out.append(part[start : m.start()])
            start = m.end()
    out.append(part[start:])
    return out


#: where a question starts after a statement in one sentence ("I just moved to Lyon, what are some good
#: neighborhoods?", "I'm 42 - is it too late to learn piano?"); a match starts at the comma or the dash
_QUESTION_AFTER = re.compile(
    r"(?:,|(?<=\S)\s++[-\u2013\u2014]++)\s*+(?:(?:and|but|so|anyway|now)\s++)?+"
    r"(?=(?:what|where|when|who|whom|whose|why|how|which|do|does|did|is|are|was|were|can|could|would|should|"
    r"will|shall|may|might|have|has|am|any|anyone|anybody|anything|thoughts|ideas|suggestions|"
    r"recommendations|tips|advice)\b)",
    re.IGNORECASE,
)
#: a tag question asks the statement itself ("I live in Paris, don't I?", "..., is it not?")
_TAG_QUESTION = re.compile(
    r"^\s*+(?:am|is|are|was|were|do|does|did|have|has|had|can|could|will|would|should)(?:n't|\s+not)?\s+"
    r"(?:not\s+)?(?:I|you|we|it|he|she|they|there)\s*+\?+\s*+$",
    re.IGNORECASE,
)
#: a label before a colon ("Quick question: ...") does not make what follows a statement
_OPENER = re.compile(r"^[^:?]{0,40}:\s*+")


def _question_after_statement(sentence: str) -> list[str]:
    """A sentence that asks a question after a statement: [the statement, the question]; a question
    throughout (its head asks: "Where do I live, do you know?") or a tag question stays one."""
    if not sentence.rstrip().endswith("?"):
        return [sentence]
    m = _QUESTION_AFTER.search(sentence)
    if m is None or _TAG_QUESTION.match(sentence, m.end()):
        return [sentence]
    head = sentence[: m.start()]
    opened = _OPENER.match(head)
    if _QUESTION_START.match(head, opened.end() if opened else 0):
        return [sentence]
    return [head, sentence[m.end() :]]


def split_sentences(text: str) -> list[str]:
    # protect email dots and decimals from the splitter: it only splits after [.!?] plus a space
    parts = [
        r
        for p in _SENT_SPLIT.split(text)
        if p
        for q in _lower_starts(p)
        for r in _question_after_statement(q)
    ]
    return [p.strip() for p in parts if p and p.strip()]


_QUESTION_START = re.compile(
    r"^(?:what|where|when|who|whom|whose|why|how|which|do|does|did|is|are|was|were|can|could|"
    r"would|should|will|shall|may|might|have|has|had|am)\b",
    re.IGNORECASE,
)
_HYPOTHETICAL = re.compile(
    r"\b(?:if|unless|suppose|supposing|imagine|imagining|pretend|hypothetically|maybe|perhaps|"
    r"might|may be|wish|wonder|wondering|whether|could|should|would(?! like to| love to))\b",
    re.IGNORECASE,
)
#: the speaker's own word said again ("Like I said, ...", "As I've said before, ...") reports nobody else
_OWN_WORD = r"(?<!\bas I )(?<!\blike I )(?<!\bas I've )(?<!\blike I've )(?<!\bas I have )(?<!\blike I have )"
_REPORTED = re.compile(
    r"\b(?:thinks?|thought|says?(?! (?:hi|hello|hey)\b)|"
    + _OWN_WORD
    + r"said(?! (?:hi|hello|hey)\b)|believes?|believed|"
    r"claims?|claimed|told me|tells me|"
    r"reckons?|feels? that|heard|apparently|supposedly|according to|in the movie|in the book|"
    r"character|pretending)\b",
    re.IGNORECASE,
)
_SMALL_TALK = re.compile(
    r"^(?:hi|hello|hey|thanks|thank you|ok|okay|sure|yes|no|lol|haha|good (?:morning|night)|bye)\b"
    r"[\s!.,]*$",
    re.IGNORECASE,
)


#: where a clause's own statement ends and a reason, a relative clause, a remark or another clause
#: begins: a hedge after it hedges that part, not the statement ("I moved to Lyon so I could be near my
#: mom", "I moved to Lyon, which my friends said was crazy", "I live in Lyon and I should learn French")
_STATED_END = re.compile(
    r"[,;(]|\s[-\u2013\u2014]+\s|\u2014"
    r"|\s(?:and|but)\s++(?:I|we)\b|\sso(?=\s++(?:that|I|we|my|he|she|they)\b)"
    r"|\s(?:because|cause|since|which|who|that|while|whereas|although|though|when|where|after|before|until)\b",
    re.IGNORECASE,
)
#: an afterthought that hedges all that was said before it ("I live in Paris, I think", "..., maybe")
_AFTERTHOUGHT = re.compile(
    r"\b(?:guess|probably|suppose|believe|think|maybe|perhaps|apparently|supposedly)\b", re.I
)


def hedged(clause: str) -> bool:
    """Whether the statement of `clause` (up to where a reason, a relative clause or another clause
    starts) is a hypothetical or another person's word ("If I lived in Tokyo ...", "I think I might move
    to Berlin", "My friend thinks I live in Paris"), or an afterthought at its end hedges it."""
    end = _STATED_END.search(clause)
    stated = clause if end is None else clause[: end.start()]
    if _HYPOTHETICAL.search(stated) or _REPORTED.search(stated):
        return True
    cut = max(clause.rfind(","), clause.rfind("("), clause.rfind(" - "))
    tail = clause[cut + 1 :] if cut >= 0 else ""
    return len(tail.split()) <= 3 and (
        _AFTERTHOUGHT.search(tail) is not None or _HYPOTHETICAL.search(tail) is not None
    )


def is_statement(sentence: str) -> bool:
    """False for questions, small talk and a sentence whose first statement is hedged (`hedged`:
    hypotheticals, reported speech and opinions); a later clause's hedge is that clause's."""
    s = sentence.strip()
    if not s or s.endswith("?") or _SMALL_TALK.match(s):
        return False
    if _QUESTION_START.match(s) and not re.match(r"^(?:am|is|are|was|were|have|has|had)\s", s, re.I):
        return False
    if _QUESTION_START.match(s) and re.match(
        r"^(?:am|is|are|have|has)\s+(?:i|you|we|he|she|they)\b", s, re.I
    ):
        return False
    return not hedged(s)


#: Latin letters that NFKD leaves whole, spelled as they are written in ASCII
_LATIN_LETTERS = {
    "ø": "o", "Ø": "o", "æ": "ae", "Æ": "ae", "œ": "oe", "Œ": "oe", "ß": "ss", "ẞ": "ss", "đ": "d", "Đ": "d",
    "ð": "d", "Ð": "d", "ł": "l", "Ł": "l", "þ": "th", "Þ": "th", "ı": "i", "ħ": "h", "Ħ": "h",
}  # fmt: skip


def _spelled(name: str) -> str:
    """`name` (case folded) as a slug spells it: each letter its ASCII form without accents where it has
    one ("é" -> "e", "ﬁ" -> "fi"), any other letter, mark or digit as it is ("б", "東"), nothing else."""
    kept: list[str] = []
    marked = False  # a mark stays only on a letter kept as it is (on one spelled in ASCII it is an accent)
    for c in unicodedata.normalize("NFKD", name):
        if c in _LATIN_LETTERS:
            kept.append(_LATIN_LETTERS[c])
            marked = False
        elif unicodedata.combining(c):
            if marked:
                kept.append(c)
        elif c.isascii() or unicodedata.category(c)[0] in "LMN":
            kept.append(c)
            marked = not c.isascii()
        else:
            marked = False
    return unicodedata.normalize("NFC", "".join(kept))


def slug(name: str) -> str:
    """'São Paulo' -> 'sao-paulo'; 'Acme Corp.' -> 'acme-corp'; 'Søren' -> 'soren'; 'Борис' -> 'борис':
    a name in any script keeps an id of its own (folded to ASCII, every Cyrillic name would be 'x')."""
    name = name.lower() if name.isascii() else _spelled(name.casefold()).casefold()
    return re.sub(r"[^a-z0-9\u0080-\U0010ffff]+", "-", name).strip("-") or "x"


def entity_id(name: str) -> str:
    return f"ent:{slug(name)}"


_TRAILERS = re.compile(
    r"(?<!\s)(?:(?:\s*+,)?+\s*+\b(?:now|these days|nowadays|at the moment|currently|right now|lately|recently|"
    r"again|too|as well|also|a lot|a ton|so much|very much|really|anymore|any more|any longer|originally|"
    r"(?:since|from|in|as of|starting)\s+(?:last|this|next)\s+\w+|since \d{4}|in \d{4}|"
    r"(?:last|this|next|on) (?:week|month|year|summer|winter|spring|fall|autumn|weekend|night|monday|tuesday|"
    r"wednesday|thursday|friday|saturday|sunday)|"
    r"(?:(?:about|around|almost|nearly|over|roughly|some)\s+)?(?:a|one|two|three|four|five|six|\d+) (?:days?|weeks?|months?|years?) ago|"
    r"(?:years|months|ages|a while|long) ago|"
    # how often: "tennis every Sunday", "soccer twice a week" ("The Daily" is a name: lower case only)
    r"every (?:other |single )?(?:night|monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?|"
    r"(?:once|twice|(?:two|three|four|five|\d+) times) (?:a|per|every) (?:day|week|month|year)|"
    r"on (?:mondays|tuesdays|wednesdays|thursdays|fridays|saturdays|sundays|the weekends?)|"
    r"(?-i:daily|weekly|monthly|regularly|often|sometimes|occasionally)|"
    r"for now|for the time being|"
    r"yesterday|today|tomorrow|for (?:a|one|two|three|\d+) (?:days?|weeks?|months?|years?)|"
    r"every (?:day|week|morning|evening|weekend)|on weekends|full[- ]time|part[- ]time|"
    # a chat tail is the speaker's tone, no part of the value ("Lyon lol", "Stripe rn"); in capitals
    # "IMO" and "RN" are names ("I work at IMO", "I'm an RN")
    r"lol|lmao|rofl|haha\w*|hehe\w*|btw|by the way|tbh|fyi|(?-i:imo|rn)|xd|tho|though|actually|honestly)\b)++\s*+[.!,]*+$",
    re.IGNORECASE,
)
#: emoji and emoticons that close a value or a sentence ("Lyon 🎉", "Lyon :)"); a match starts where the
#: run does
_CHAT_MARKS = re.compile(
    r"(?<![\s\u2600-\u27bf\U0001f000-\U0001faff\ufe0f\u200d])\s*+[\u2600-\u27bf\U0001f000-\U0001faff\ufe0f\u200d]++$"
    r"|(?<!\s)\s++(?:[:;=][-']?[()\[\]DPpOo3/|*]++|<3)$"
)
#: one hashtag, as a whole word (`_without_hashtags` finds the words from the end, so the search is linear)
_HASHTAG = re.compile(rf"#{LETTER}[\w\-]*+")


def _without_hashtags(text: str) -> str:
    """`text` without the hashtags that end it, after a word ("Berlin #moving #newlife" -> "Berlin"): they
    tag the message, they are no part of the value. A text of hashtags alone is left as it is."""
    end = len(text.rstrip())
    cut = None
    while end:
        start = end
        while start and not text[start - 1].isspace():
            start -= 1
        if not start or not _HASHTAG.fullmatch(text, start, end):
            break
        while start and text[start - 1].isspace():
            start -= 1
        cut = end = start
    if cut is None or not cut or text[cut - 1] == "#":
        return text
    return text[:cut]


#: trailers are short phrases: each pass searches only this many characters at the end (a search of the
#: whole text would retry the run of trailers from each of its phrases: quadratic)
TRAILER_WINDOW = 256


_CLOSING = {")": "(", "]": "[", "}": "{"}
_OPENING = {"(": ")", "[": "]", "{": "}"}
#: what may end or open a value without being part of it (a bracket only when it has no pair)
_END_MARKS = frozenset(" .!?,;:'\u2013\u2014")


def _trim_marks(text: str) -> str:
    """`text` without the punctuation, spaces and dashes at its ends, nor the brackets there that have no
    pair in it ("Google)", "Google}}" of pasted JSON, "Berlin - ", "(Google"); "Stripe (payments
    company)" keeps its pair and "C-" its hyphen. One pass from each end: linear."""
    counts = {c: text.count(c) for c in "()[]{}"}
    end = len(text)
    while end:
        c = text[end - 1]
        if c == "-":  # a run of hyphens after a space joined what came next; one after a letter is its word's
            first = end - 1
            while first and text[first - 1] == "-":
                first -= 1
            if first and not text[first - 1].isspace():
                break
            end = first
            continue
        if c in _CLOSING and counts[c] > counts[_CLOSING[c]]:
            counts[c] -= 1
        elif not (c in _END_MARKS or c.isspace()):
            break
        end -= 1
    start = 0
    while start < end:
        c = text[start]
        if c in _OPENING and counts[c] > counts[_OPENING[c]]:
            counts[c] -= 1
        elif not (c in _END_MARKS or c.isspace()):
            break
        start += 1
    return text[start:end]


def before_stray_quote(text: str) -> str:
    """`text` up to a closing double quote that opens nowhere in it: the end of a quoted string the value
    was said inside ('Google", "age": 3' and 'Google."}}' of pasted JSON -> 'Google'); a quote that
    opens or closes a pair in it stays ('movie "Yes!"', 'Toys"R"Us')."""
    opened = False
    for at, c in enumerate(text):
        if c != '"':
            continue
        after = text[at + 1 : at + 2]
        if not opened and at and not text[at - 1].isspace() and not (after.isalnum() or after == "'"):
            return text[:at]
        opened = not opened
    return text


def trim_ends(text: str) -> str:
    """`text` without the spaces, punctuation, dashes, unpaired brackets and quotes around it; a double
    quote goes only with its pair around the whole text or when it has no pair ('"Brave" by Sara
    Bareilles' keeps both)."""
    previous = None
    while previous != text:
        previous = text
        text = _trim_marks(text)
        if len(text) > 1 and text[0] == "#" and text[1].isalpha():
            text = text[1:]  # a hashtag that is the value itself ("I love #hiking")
        if len(text) > 1 and text[0] == text[-1] == '"' and text.count('"') == 2:
            text = text[1:-1]
        elif text.count('"') % 2:
            if text.startswith('"'):
                text = text[1:]
            elif text.endswith('"'):
                text = text[:-1]
    return text


def clean_object(text: str) -> str:
    """Trim trailing time expressions, adverbs, chat tails, emoji, hashtags and punctuation from a
    captured object, and what follows a quote it was said inside (`before_stray_quote`)."""
    text = trim_ends(before_stray_quote(text))
    previous = None
    while previous != text:
        previous = text
        m = _TRAILERS.search(text, max(0, len(text) - TRAILER_WINDOW))
        if m:
            text = text[: m.start()]
        m = _CHAT_MARKS.search(text, max(0, len(text) - TRAILER_WINDOW))
        if m:
            text = text[: m.start()]
        text = _without_hashtags(text)
        text = trim_ends(text)
    return text


#: what a cut at a date leaves hanging: "for the [next week]", "cleats on the [15th of last month]"
DANGLING = frozenset(
    {"for", "from", "on", "in", "of", "by", "since", "until", "till", "about", "around", "before", "after"}
    | {"during", "over", "within", "the", "a", "an", "next", "last", "starting", "beginning"}
)


def without_dangling(text: str, words: frozenset[str] = DANGLING) -> str:
    """`text` less the trailing `words` (a word loop: a regex over runs of spaces is quadratic)."""
    parts = text.split()
    while len(parts) > 1 and parts[-1].lower() in words:
        parts.pop()
    return " ".join(parts)


#: a capital article before a capital word starts a title ("The Royal Affair", "The Office"): it stays
_ARTICLE = re.compile(rf"^(?:(?-i:A|An|The)\s+(?!{UPPER})|(?-i:a|an|the)\s|(?:some|my)\s)\s*+", re.IGNORECASE)


def strip_article(text: str) -> str:
    return _ARTICLE.sub("", text.strip())


#: where a reason, a condition, a remark or a clause of its own starts, a list of things ends ("camping
#: trips, 'cause nature brings peace"; "I'm learning German now - tough but fun")
#: a dash between spaces ("pottery - the creativity is awesome"): what follows is a remark of its own
SPACED_DASH = r"\s++[-\u2013\u2014]++\s"
REASON = re.compile(
    # a match starts at a comma or at the first space of a run (else runs of spaces are quadratic)
    r"(?:,|(?<![\s,]))\s++(?:because|since|but|when|while|so|cuz|['\u2019]cause)[\s,]|,\s*+cause\s"
    # a subject after a comma starts a clause of its own ("sci-fi movies, they're a great escape")
    r"|,\s*+(?:and\s++)?(?:they|he|she|we|it|I)(?=\s|['\u2019])"
    # a relative clause after a comma says something of what came before ("cats, which sucks")
    r"|,\s*+(?:which|who|whom|whose)\s"
    # a dash between spaces, or an em dash, starts a remark ("pottery - the creativity is awesome")
    rf"|(?<!\s){SPACED_DASH}(?!\d)|\u2014"
    # a dash typed against the word before it, then a subject ("The Santa Clause too- it is so good")
    r"|(?<=\w)-\s++(?=(?:it|this|that|they|he|she|we|I)\s)",
    re.IGNORECASE,
)
#: an "&" between two words with no space ("Q&A", "R&D") is part of a name, not a list's joint
_LIST_SPLIT = re.compile(
    r"(?<!\s)(?:\s*+(?:,\s*+(?:(?:and|or)\s++)?+|(?:(?<=\s)&|&(?=\s))\s*+)|\s++(?:and|or)\s++)", re.IGNORECASE
)
#: one thing whose name holds "and" or "&": a list or a name is never cut inside it
COMPOUNDS = re.compile(
    r"\b(?:rock and roll|rhythm and blues|r ?& ?b|drum and bass|mac(?:aroni)? and cheese|fish and chips|"
    r"salt and (?:pepper|vinegar)|peanut butter and jelly|cookies and cream|arts and crafts|hide and seek|"
    r"dungeons (?:and|&) dragons|pride and prejudice|law and order|tom and jerry|simon and garfunkel|"
    r"(?:johnson|procter|marks|barnes|ernst|black|crate|ben|dolce|abercrombie) (?:and|&) "
    r"(?:johnson|gamble|spencer|noble|young|decker|barrel|jerry's|gabbana|fitch)|at ?& ?t|h ?& ?m)\b",
    re.IGNORECASE,
)


#: a quoted title or phrase ("the "Before and After" post idea") is one thing as well
_UNCUT = re.compile(
    rf"{COMPOUNDS.pattern}|\"[^\"\n]{{1,120}}\"|\u201c[^\u201d\n]{{1,120}}\u201d", re.IGNORECASE
)


def separators(pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """The matches of `pattern` in `text` that do not fall inside one of its `COMPOUNDS` or a quote."""
    inside = _UNCUT.finditer(text)
    span = next(inside, None)
    for m in pattern.finditer(text):
        while span is not None and span.end() <= m.start():
            span = next(inside, None)
        if span is None or m.end() <= span.start():
            yield m


def cut_at(pattern: re.Pattern[str], text: str) -> str:
    """`text` before the first separator (`separators`): 'Johnson and Johnson in Boston' -> 'Johnson
    and Johnson' for a pattern that cuts at ' in ' and ' and '."""
    first = next(separators(pattern, text), None)
    return text if first is None else text[: first.start()]


def split_list(text: str) -> list[str]:
    """'peanuts, shellfish and latex' -> ['peanuts', 'shellfish', 'latex']; 'rock and roll' stays one."""
    items: list[str] = []
    start = 0
    for m in separators(_LIST_SPLIT, text):
        items.append(text[start : m.start()])
        start = m.end()
    items.append(text[start:])
    return [p for p in (clean_object(x) for x in items) if p]


def is_capitalized(text: str) -> bool:
    return bool(text) and text[0].isupper()


def norm_value(text: str) -> str:
    """Case- and whitespace-insensitive form used to compare values."""
    return re.sub(r"\s+", " ", text.strip().casefold())


#: lower case only, and no "I" before a capital: "My", "Me", "You", "I Will" are a title's words
_FIRST_PERSON = re.compile(
    rf"\b(?:(?P<be>I (?:am|was))|I(?=\s(?!{UPPER})[\s\S]|$|[,.;:!?])|(?P<my>my|mine|myself|me|we|our|ours|ourselves|us))\b"
)
#: the speaker with the people they speak for ("our two-year-old") reads as they do
_THIRD: dict[str, str] = {
    "my": "their",
    "mine": "theirs",
    "myself": "themselves",
    "me": "them",
    "we": "they",
    "our": "their",
    "ours": "theirs",
    "ourselves": "themselves",
    "us": "them",
}


def _after_a_capital(text: str, at: int) -> bool:
    """Whether the word before `at` starts with a capital (no regex: a search back is quadratic)."""
    before = text[max(0, at - 64) : at]
    words = before.split()
    return bool(words) and before[-1:].isspace() and words[-1][:1].isupper()


def third_person(value: str) -> str:
    """The speaker's own words in a fact about the speaker, as a third person reads them: "make sure I
    am ready for my exam" -> "make sure they are ready for their exam". Quoted titles stay as written."""
    out: list[str] = []
    at = 0
    for m in separators(_FIRST_PERSON, value):
        if m.group("my"):
            new = _THIRD[m.group("my")]
        elif m.group("be"):
            new = "they are" if m.group("be").endswith("am") else "they were"
        elif _after_a_capital(value, m.start()):
            continue  # "World War I", "Elizabeth I": a numeral, not the speaker
        else:
            new = "they"
        out.append(value[at : m.start()] + new)
        at = m.end()
    return "".join(out) + value[at:]


def own_name(name: str) -> str:
    """A name without the possessive it was read with ("my brother Michael's wife", "Luna's skin")."""
    return name[:-2] if name.endswith(("'s", "\u2019s")) else name


#: the listener's things, or the talk itself ("your turtles", "hear your thoughts", "share it with you");
#: what the listener offered stays a thing one can like ("the recipe you provided")
_SECOND_PERSON = re.compile(
    r"\b(?:your|yours|yourself|yourselves|y'all|you(?! (?:have )?(?:"
    r"provided|mentioned|gave|suggested|recommended|listed|shared|described|showed|shown|sent|offered)\b))\b"
)


def speaks_to_listener(value: str) -> bool:
    return next(separators(_SECOND_PERSON, value), None) is not None


#: what one asks of the talk itself, not a goal one holds: "know more about the CRM trend", "ask about
#: sleep habits", "discuss the ethics of AI", "get some advice on a silent auction"
_ASKS = re.compile(
    r"^(?:(?:know|hear|find out) (?:(?:a (?:bit|little) |some )?more )?(?:about|on)\b"
    r"|know (?:what|how|whether|if|which|why|when|where|who)\b"
    r"|ask (?:about|more|(?:a|some|a few) (?:(?:quick|follow-up|more) )?questions?)\b"
    r"|(?:discuss|chat about|talk about)\b"
    r"|(?:hear|get) (?:(?:some|more|a few) )*(?:suggestions|advice|tips|ideas|recommendations|information|info"
    r"|feedback|thoughts)\b|hear what\b"
    r"|explore more about\b)",
    re.IGNORECASE,
)


def asks_the_talk(value: str) -> bool:
    """A goal that is a request of the conversation itself ("know more about X", "ask about Y")."""
    return _ASKS.match(value) is not None


#: a value that ends on a word pointing back to what was said before ("learn more about it", "check them
#: out", "try it sometime", "help make that happen", "doing it right")
_POINTS_BACK = re.compile(
    r"\b(?:it|them|this|that|these|those|there|him|her|me|us)"
    r"(?:\s+(?:out|up|over|here|again|too|soon|sometime|someday|happen|together|around|in|later|next|right"
    r"|well|correctly|properly|nicely|firsthand))*\W*$",
    re.IGNORECASE,
)
_OF_POINTER = re.compile(r"\bof (?:it|them|this|that|these|those)\W*$", re.IGNORECASE)
_WORDS = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
#: words that say nothing of what a like or a goal is about without the thing they point back to
_LIGHT = word_set(
    "a an the to of in on at for with about around through into out up over by from as like more most much "
    "many lot bit little again also really just even still too so very all some any every either both "
    "everything something anything things thing way ways together i me my we our us you your he she they "
    "their them it its this that these those there here him her be being been am is are was were do doing "
    "done did get getting got go going gone make making made happen know knowing see seeing find finding "
    "try trying figure keep keeping take taking give giving use using start starting continue help helping "
    "hear hearing learn learning check checking look looking work working sure best better good great new "
    "own other others similar different else sometime someday soon later next right well correctly "
    "properly nicely firsthand"
)

#: light words that still name what one likes or wants when nothing else is said ("User likes to help")
_A_THING = word_set("help helping work working other others thing things better learn learning")


def points_back(value: str) -> bool:
    """Whether `value` says what it is about only by pointing back at what was said before ("learn more
    about them", "try making it"): it ends on such a word and names at most one thing of its own
    ("visit a retreat like that" names two and stays), or it ends on a part of such a thing ("of it");
    or it names nothing at all ("try something new")."""
    words = _WORDS.findall(value.lower())
    found = _POINTS_BACK.search(value)
    if found is None:  # "try something new", "do something similar"; "helping others" is a thing
        return all(w in _LIGHT and w not in _A_THING for w in words)
    if _OF_POINTER.search(value, max(0, found.start() - 4)) is not None:
        return True  # a part of what was said: "make the most of it", "limit their intake of those"
    return sum(1 for w in words if w not in _LIGHT) <= 1
