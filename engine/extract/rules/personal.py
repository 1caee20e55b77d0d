"""Personal facts: name, nickname, age, birthday, birthplace, where one lives or is from,
nationality, languages spoken or being learned."""

from __future__ import annotations

import re

from engine.extract.rules.clauses import Clause, Collector
from engine.extract.rules.dates import before_date, find_absolute, find_relative
from engine.extract.rules.entities import LANGUAGES, NATIONALITIES, is_person_name, is_place
from engine.extract.rules.quantities import NUMBER_PHRASE, word_number
from engine.extract.rules.text import (
    DANGLING,
    REASON,
    SPACED_DASH,
    clean_object,
    is_capitalized,
    split_list,
    without_dangling,
)
from engine.letters import LETTER, NAME_CHAR, UPPER

_NAME = rf"(?P<name>(?-i:{UPPER}{NAME_CHAR}{{1,40}}(?:\s+{UPPER}{NAME_CHAR}{{1,40}}){{0,2}}))"
#: a title is no part of the name: "Dr. Sam Smith" is Sam Smith
_TITLE = r"(?:(?-i:Dr|Mr|Mrs|Ms|Mx|Prof)\.?\s+)?"
_MY_NAME = re.compile(
    rf"\b(?:my (?:full |first |new |legal |real )?name is|changed my name to) {_TITLE}{_NAME}", re.IGNORECASE
)
_CALL_ME = re.compile(
    rf"(?:^(?:(?:oh|ok|okay|so|and|also),? )?call me|\b(?:you can|please|just) call me|(?:everyone|people|friends|most people) calls? me|i go(?:es)? by) {_NAME}",
    re.IGNORECASE,
)
_AM_NAME = re.compile(rf"^am {_TITLE}{_NAME}(?:\s*[,!.].*)?$")
_AGE = re.compile(
    rf"^(?:am|is) (?P<n>\d{{1,3}}|{NUMBER_PHRASE})(?:(?P<adj>[\s-]*(?:year|yr)[- ]old| y/?o)|(?P<u>[\s-]*(?:years|yrs)(?:[- ]old)?))?"
    r"(?P<rest>.*)$",
    re.IGNORECASE,
)
_AGE_END = re.compile(
    r"(?<!\s)\s*+(?:$|[,.;:!?)#]|(?:and|but|so|now|too|already|soon|this|next|in|on|as of|myself|though|today|"
    r"lol|haha|btw|by the way|tbh|fyi|actually|honestly)\b)",
    re.IGNORECASE,
)
_AGE_TURNED = re.compile(
    rf"^(?:have |has )?(?:turned|celebrated turning|am celebrating turning) (?P<n>\d{{1,3}}\b|{NUMBER_PHRASE})"
    r"|^(?:have |has )?(?:celebrated|am celebrating) my (?P<n2>\d{1,3})(?:st|nd|rd|th) birthday\b",
    re.IGNORECASE,
)
_AGE_ADJ = re.compile(r"^(?:am|is) an? (?P<n>\d{1,3})[- ]years?[- ]old\b", re.IGNORECASE)
_MY_AGE = re.compile(r"\bmy age is (?P<n>\d{1,3})\b", re.IGNORECASE)
_BIRTHDAY = re.compile(r"\bmy (?:birthday|date of birth|dob) is (?!not\b)(?:on )?(?P<o>.+)$", re.IGNORECASE)
_OTHER_BIRTHDAY = re.compile(rf"\b{_NAME}'s birthday is (?:on )?(?P<o>.+)$")
_BORN = re.compile(r"^(?:was|were) born (?:on|in) (?P<o>.+)$", re.IGNORECASE)
#: no "staying in": a stay ("staying in Lisbon for two weeks") is a visit
_LIVES = re.compile(
    r"^(?:(?:am|is|are|have been|has been) )?(?:live|lives|living|reside|resides|residing|based|"
    r"settled|now) (?:in|at|out of) (?P<o>.+)$|^(?:have|has) (?:lived|resided) (?:in|at) (?P<o2>.+)$",
    re.IGNORECASE,
)
_MOVED = re.compile(
    r"^(?:(?:have|has|had|am|is) )?(?:moved|relocated|moving|relocating|emigrated)(?: back| over| out)? "
    rf"(?:from (?-i:{UPPER}(?:{LETTER}|-)*(?: {UPPER}(?:{LETTER}|-)*){{0,2}}) )?(?:to|into) "
    r"(?:(?:a|an|our|my) (?:new |nice |small |bigger |smaller )?(?:place|flat|apartment|house|home|condo) (?:in|near) )?"
    r"(?P<o>.+)$",
    re.IGNORECASE,
)
_MY_HOME = re.compile(
    rf"\bmy (?:home|hometown|city) is (?:now )?(?P<o>{UPPER}.+)$|^[Hh]ome(?: for (?:me|us))? is (?:now )?(?P<o2>{UPPER}.+)$"
)
#: a move told by what follows it: "Unpacking boxes in Montreal", "Settling into our new flat in Leeds",
#: "The move to Oslo went fine" (where one lives now, as "I moved to" says)
_MOVE_DONE = re.compile(
    r"^(?:(?:am|is|are|was|were|have|has|had) )?(?:been )?(?:(?:just|finally|still|busy|currently) )?(?:"
    r"(?:unpacking|unpacked) (?:the |my |our |all the |all our |the last of the |moving )?boxes"
    r"|(?:settling|settled) into (?:my|our|the) new (?:place|flat|apartment|house|home)"
    rf") (?:in|at) (?P<o>{UPPER}.*)$"
    rf"|^the move to (?P<o2>{UPPER}.*?) went\b",
    re.IGNORECASE,
)
_FLAT = re.compile(
    r"^(?:have|has|have got|has got|got|rent|rents) (?:an? |my |our )?(?:own )?"
    r"(?:(?:small|little|tiny|new|nice|cozy|cosy|big|lovely|one-bedroom|two-bedroom) )*"
    r"(?:flat|apartment|condo|studio) (?:in|near) (?P<o>.+)$",
    re.IGNORECASE,
)
_FROM = re.compile(r"^(?:am|is|are) (?:originally )?from (?P<o>.+)$|^grew up in (?P<o2>.+)$", re.IGNORECASE)
_NATIONALITY = re.compile(
    r"^(?:am|is) (?:an? )?(?P<o>[A-Z][a-z]+)(?: citizen| national)?(?:$|\s*,|\s+(?:but|and|by)\b)"
)
_SPEAKS = re.compile(r"^(?:speak|speaks|am fluent in|is fluent in)\s+(?P<o>.+)$", re.IGNORECASE)
_LEARNING = re.compile(r"^(?:am|is|have been|has been) learning (?P<o>.+)$", re.IGNORECASE)
_LEARN = re.compile(r"^learn (?P<o>.+)$", re.IGNORECASE)
#: where what one learns ends besides a reason or a remark (`REASON`): any comma, a second verb, or
#: how long ("for a few months")
_LEARNING_END = re.compile(
    r"[,;]|\sand (?:want|need|it|I)\b"
    r"|\sfor (?:about |over |almost |nearly )?(?:a few|a couple of|several|\d+|a|one|two|three) (?:days|weeks|months|years)\b",
    re.IGNORECASE,
)
#: how much one learns is no part of what: "a lot about Agile" is learning about Agile
_LEARNING_AMOUNT = re.compile(r"^(?:a lot|a bit|a little|so much|lots)(?: of)?\s+", re.IGNORECASE)
#: what only points back, or a verb joined on: "learning so much from it", "learning and want to ..."
_LEARNING_NOTHING = re.compile(r"^(?:and|or)\b|\b(?:it|them|this|that|these|those)$", re.IGNORECASE)
_LANG_ADJ = re.compile(
    r"^(?:fluent|some|a little|a bit of|basic|native|conversational|decent)\s+", re.IGNORECASE
)


#: a place name never ends in a preposition: "Lisbon in [May]", "the town I grew up at"
_PLACE_DANGLING = DANGLING | {"at"}
#: "the" before a proper name whose every word is capitalized: "the UK", "the United States of America",
#: not "the Marketing team"
_THE_PROPER = re.compile(rf"^the (?-i:{UPPER}[\w'\-]*(?: (?:of|and|{UPPER}[\w'\-]*))*)$")
#: being somewhere is no residence, but no longer being there ends one: "I'm not in Paris anymore"
_NO_LONGER_IN = re.compile(rf"^(?:am|is|are) in (?P<o>(?-i:{UPPER}).+)$", re.IGNORECASE)


def _place(out: Collector, clause: Clause, predicate: str, raw: str, confidence: float) -> bool:
    text, dm = before_date(raw, out.reference)
    obj = clean_object(
        re.split(
            # a place ends at a remark ("which is nice", "(near Paris)", " - loving it") or where one came from
            rf",|\s*\(|{SPACED_DASH}|\s+(?:with|for|because|since|after|where|to be|and I|but|which|who|from|until|"
            r"till|before|permanently|like)\b|\s+(?:in|on|by|this|last|next) "
            r"(?i:January|February|March|April|May|June|July|August|September|October|November|"
            r"December|spring|summer|fall|autumn|winter)\b|\s+over the (?:summer|winter|holidays|weekend)\b",
            text,
        )[0]
    )
    obj = re.sub(r"^(?:the city of|downtown|central|a town called|a city called)\s+", "", obj, flags=re.I)
    obj = without_dangling(obj, _PLACE_DANGLING)
    # "the UK", "the Bay Area": the place is named without its article, the fact reads with it
    name = obj[4:] if _THE_PROPER.match(obj) else obj
    if not name or not is_capitalized(name) or len(name.split()) > 4:
        return False
    eid = out.entity(name, "place", 0.85 if is_place(name) else 0.7)
    out.fact(clause, predicate, eid, object_type="entity", object_name=obj, confidence=confidence,
             event_date=dm.iso if dm else None)  # fmt: skip
    return True


def _age(out: Collector, clause: Clause, raw: str, confidence: float) -> None:
    n = word_number(raw)
    if n is not None and 0 < n < 120:
        out.fact(clause, "age", n, unit="years", object_name=str(n), confidence=confidence)


def _self_statements(clause: Clause, out: Collector) -> None:
    """Sentence-level self statements: my name, what to call me, my age, birthday and home."""
    s = clause.sentence
    m = _MY_NAME.search(s)
    if m and is_person_name(m.group("name")):
        out.fact(clause, "name", m.group("name"), confidence=0.95, negated=False)
    m = _MOTHER_TONGUE.search(s)
    if m and m.group("o").capitalize() in LANGUAGES:
        out.fact(clause, "speaks", m.group("o").capitalize(), confidence=0.85, negated=False)
    m = _CALL_ME.search(s)
    if m:
        out.fact(clause, "nickname", m.group("name"), confidence=0.85, negated=False)
    m = _MY_AGE.search(s)
    if m:
        _age(out, clause, m.group("n"), 0.9)
    m = _BIRTHDAY.search(s)
    if m:
        dm = find_absolute(m.group("o"))
        if dm:
            out.fact(clause, "birthday", dm.iso, object_type="date", confidence=0.9, negated=False)
    m = _MY_HOME.search(s)
    if m:
        _place(out, clause, "lives_in", m.group("o") or m.group("o2"), 0.75)
    m = _MOVE_DONE.match(s)
    if m:
        _place(out, clause, "lives_in", m.group("o") or m.group("o2"), 0.8)


def _other_birthday(clause: Clause, out: Collector) -> None:
    m = _OTHER_BIRTHDAY.search(clause.sentence)
    if m and is_person_name(m.group("name")):
        dm = find_absolute(m.group("o"))
        if dm:
            pid = out.entity(m.group("name"), "person")
            out.fact(clause, "birthday", dm.iso, object_type="date", confidence=0.85, negated=False,
                     subject=pid, subject_name=m.group("name"))  # fmt: skip


def _name_and_age(clause: Clause, out: Collector, vp: str) -> None:
    """A name ("I'm Anna") and an age ("I'm 34", "I turned 40", "I'm a 29-year-old ...")."""
    if clause.is_self and not clause.negated:
        m = _AM_NAME.match(vp)
        if m and is_person_name(m.group("name")) and m.group("name") not in NATIONALITIES:
            out.fact(clause, "name", m.group("name"), confidence=0.75)
    m = _AGE.match(vp)
    # a number is an age only where nothing it counts follows: "I'm 20, and ...", not "I'm 2 episodes
    # behind", "I'm 5 years into my career" or "Skyrim is one of my favorites"
    if m and (m.group("adj") or _AGE_END.match(m.group("rest"))):
        _age(out, clause, m.group("n"), 0.9)
    m = _AGE_TURNED.match(vp) or _AGE_ADJ.match(vp)
    if m:
        _age(out, clause, m.group("n") or m.groupdict().get("n2") or "", 0.9)


def _born(clause: Clause, out: Collector, vp: str) -> None:
    """Born on/in ...: a birthday, a birth year, or a birthplace."""
    m = _BORN.match(vp)
    if not m:
        return
    raw = m.group("o")
    dm = find_absolute(raw)
    if dm and len(dm.iso) == 10:
        out.fact(clause, "birthday", dm.iso, object_type="date", confidence=0.9)
    elif re.fullmatch(r"(?:19|20)\d{2}", clean_object(raw)):
        out.fact(clause, "birth_year", int(clean_object(raw)), confidence=0.9, unit=None)
    else:
        _place(out, clause, "born_in", raw, 0.85)


_LIVE_THERE = re.compile(r"^(?:live|lives|am living|reside|stay|am staying) there\b", re.IGNORECASE)


def _residence(clause: Clause, out: Collector, vp: str) -> None:
    """Where one lives: "I live in", "I have a flat in", "I moved to" (or a plan to move)."""
    m = _LIVES.match(vp)
    if m:
        _place(out, clause, "lives_in", m.group("o") or m.group("o2"), 0.9)
    m = _FLAT.match(vp)
    if m:
        _place(out, clause, "lives_in", m.group("o"), 0.7)
    m = _MOVE_DONE.match(vp)
    if m:
        _place(out, clause, "lives_in", m.group("o") or m.group("o2"), 0.8)
    m = _NO_LONGER_IN.match(vp) if clause.negated else None
    if m:
        _place(out, clause, "lives_in", m.group("o"), 0.8)
    if clause.negated and clause.is_self and _LIVE_THERE.match(vp):  # "I don't live there anymore"
        out.fact(clause, "lives_in", None, confidence=0.7)
    m = _MOVED.match(vp)
    if m and not re.match(r"^(?:am|is) (?:moving|relocating)", vp, re.I):
        _place(out, clause, "lives_in", m.group("o"), 0.9)
    elif m and not clause.negated:  # "I'm moving to Berlin next month" is a plan
        place = clean_object(re.split(r",|\s+(?:with|for|because|since|after|and|but)\b", m.group("o"))[0])
        if place and is_capitalized(place) and len(place.split()) <= 4:
            out.entity(place, "place", 0.7)
            out.fact(clause, "plans", f"move to {place}", confidence=0.7)


def _origin(clause: Clause, out: Collector, vp: str) -> None:
    """Where one is from, and nationality."""
    m = _FROM.match(vp)
    if m:
        _place(out, clause, "from", m.group("o") or m.group("o2"), 0.8)
    m = _NATIONALITY.match(vp)
    if m and m.group("o") in NATIONALITIES:
        out.fact(clause, "nationality", m.group("o"), confidence=0.8)


_MOTHER_TONGUE = re.compile(r"\bmy (?:native|first|mother) (?:language|tongue) is (?P<o>[A-Z][a-z]+)\b", re.I)
_NATIVE_SPEAKER = re.compile(r"^(?:am|is) a native (?P<o>[A-Z][a-z]+) speaker\b")


def _languages(clause: Clause, out: Collector, vp: str) -> None:
    """Languages spoken, and what one is learning."""
    m = _NATIVE_SPEAKER.match(vp)
    if m and m.group("o") in LANGUAGES:
        out.fact(clause, "speaks", m.group("o"), confidence=0.85)
    m = _SPEAKS.match(vp)
    if m:
        for item in split_list(m.group("o")):
            lang = _LANG_ADJ.sub("", item).split()[0] if item.split() else ""
            if lang in LANGUAGES:
                out.fact(clause, "speaks", lang, confidence=0.85)
    # "I stopped learning Spanish" reads as a negated "learn Spanish"
    m = _LEARNING.match(vp) or (_LEARN.match(vp) if clause.negated else None)
    if m:
        # "learning how to draw" keeps its "how to": a bare verb ("is learning draw") is no thing
        obj = _LEARNING_AMOUNT.sub("", clean_object(_LEARNING_END.split(REASON.split(m.group("o"))[0])[0]))
        if obj and not _LEARNING_NOTHING.search(obj) and not find_relative(obj, out.reference):
            out.fact(clause, "learning", obj, confidence=0.75)


def extract(clause: Clause, out: Collector) -> None:
    if clause.is_self:
        _self_statements(clause, out)
    _other_birthday(clause, out)
    vp = clause.vp
    if not vp:
        return
    if not clause.plain_negation:
        _name_and_age(clause, out, vp)
    _born(clause, out, vp)
    if clause.plain_negation:
        return
    _residence(clause, out, vp)
    _origin(clause, out, vp)
    _languages(clause, out, vp)
