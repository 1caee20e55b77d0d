"""A sentence becomes clauses: who the statement is about (the user for "I ...", a named person for
"Tom ..." or "My sister Anna ..."), the verb phrase after the subject, and whether it is negated.
The `Collector` gathers facts and entities for one extraction call."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from engine.extract.base import DraftObjectType, DraftSensitivity, FactDraft
from engine.extract.rules.dates import human_date
from engine.extract.rules.entities import is_person_name, make_entity
from engine.extract.rules.text import (
    asks_the_talk,
    entity_id,
    own_name,
    points_back,
    speaks_to_listener,
    third_person,
)
from engine.letters import NAME_CHAR, UPPER
from engine.models import Entity
from engine.write.predicates import any_value, canonical, render, spec_for

RELATIONS: dict[str, str] = {
    "wife": "spouse", "husband": "spouse", "spouse": "spouse", "partner": "partner",
    "girlfriend": "partner", "boyfriend": "partner", "fiance": "partner", "fiancee": "partner",
    "son": "has_child", "daughter": "has_child", "kid": "has_child", "child": "has_child",
    "sister": "has_sibling", "brother": "has_sibling", "sibling": "has_sibling", "parent": "has_parent",
    "mom": "has_parent", "mother": "has_parent",
    "dad": "has_parent", "father": "has_parent", "mum": "has_parent", "friend": "has_friend",
    "best friend": "has_friend", "coworker": "has_colleague", "colleague": "has_colleague",
    "roommate": "has_friend",
    "cousin": "has_relative", "aunt": "has_relative", "uncle": "has_relative", "niece": "has_relative",
    "nephew": "has_relative", "grandma": "has_relative", "grandmother": "has_relative",
    "grandpa": "has_relative", "grandfather": "has_relative", "granddaughter": "has_relative",
    "grandson": "has_relative",
}  # fmt: skip
_REL = "|".join(sorted(RELATIONS, key=len, reverse=True))
_NAME = rf"(?-i:{UPPER}{NAME_CHAR}{{1,40}}(?:\s+{UPPER}{NAME_CHAR}{{1,40}})?)"

#: labels that head a line without naming anyone ("Note: I moved", "PS: ..."): what follows is the
#: speaker's own, as after "Update:"
LABELS: tuple[str, ...] = (
    "note", "notes", "reminder", "ps", "fyi", "todo", "question", "answer", "summary", "context", "edit",
    "tip", "warning", "important", "re", "subject", "title", "topic", "q", "a", "caption", "description",
    "example", "hint", "correction", "remember", "background", "sidenote", "status", "tldr", "psa",
    "breaking", "wow", "disclaimer", "recap", "bonus", "info", "details", "story", "progress", "goal",
    "problem", "issue", "result", "results", "fact", "facts", "reminders", "heads-up", "nb", "eta",
)  # fmt: skip
#: a word that is a common noun by its ending ("Correction:", "Clarification:", "Announcement:") heads a
#: line as LABELS do: no one's name ends so; a translation's label heads another's words
NOUN_ENDINGS = ("tion", "sion", "ment", "ness")
#: given names with a common noun's ending: speakers all the same ("Clement: ...")
NAMES_WITH_NOUN_ENDINGS = frozenset({"clement"})
NOUN_LABEL = (
    rf"(?!(?:translation|{'|'.join(NAMES_WITH_NOUN_ENDINGS)})\b)[a-z]{{2,}}(?:{'|'.join(NOUN_ENDINGS)})"
)
LEAD = re.compile(
    rf"^(?:(?:(?:{'|'.join(LABELS)}|{NOUN_LABEL})(?=:)|"
    r"hi|hello|hey|and|so|but|well|also|actually|oh|btw|by the way|anyway|fyi|honestly|just so you know|"
    r"for the record|update|quick update|quick question|good news|news|okay|ok|yes|yeah|no|nope|guess what|"
    # what follows "now that" is told as given ("Now that I live in Lyon, which bank should I use?")
    r"now that|"
    r"(?:it |as it )?turns out(?: that)?|sadly|unfortunately|luckily|fortunately|finally|"
    r"(?:big|great|bad|sad|some|exciting|happy) news|change of plans?|(?:just a )?heads up|long story short|"
    r"(?:big|major|huge|life|small|little|personal|career|job|housing) update|"
    r"(?:last|next|this) (?:week|month|year|weekend|summer|spring|fall|winter)|yesterday|today|"
    r"recently|lately|now|these days|in \d{4}|since \d{4}|as of (?:today|now|\w+)|"
    r"(?:a|one|two|three|four|five|\d+) (?:days?|weeks?|months?|years?) ago)[,:!]?\s+)+",
    re.IGNORECASE,
)
_LEAD = LEAD
_SELF = re.compile(r"^(?:I|we)\s+(?P<vp>.+)$", re.IGNORECASE)
#: the speaker with someone, unnamed or named: "My wife and I moved to Denver", "Me and my boyfriend
#: just moved to Austin", "Tom and I live in Rome" say what "we" would ("My wife Sarah and I": `_MY_REL`)
_WITH = r"(?:(?:best|new|old|little|big|younger|older|two|three|whole)\s+)?(?!and\b)[a-z]+"
_JOINT = re.compile(
    rf"^(?:(?:my|our)\s+{_WITH}\s+and\s+I|me\s+and\s+(?:my|our)\s+{_WITH}(?=\s)"
    rf"|(?P<name>(?-i:{UPPER}){NAME_CHAR}{{1,40}})\s+and\s+I)\s+(?P<vp>.+)$",
    re.IGNORECASE,
)
_MY_REL = re.compile(
    rf"^my\s+(?:(?:older|younger|little|big|baby|eldest|youngest|new)\s+)?(?P<rel>{_REL})(?:,)?\s+(?P<name>{_NAME})(?:,)?\s+(?P<vp>.+)$",
    re.IGNORECASE,
)
_APPOS = re.compile(
    rf"^(?P<name>{_NAME}),\s+my\s+(?:(?:older|younger|little|big|new|current)\s+)?(?P<rel>{_REL}),\s+(?P<vp>.+)$",
    re.IGNORECASE,
)
_OTHER = re.compile(
    rf"^(?P<name>{_NAME})\s+(?P<vp>(?:lives|works|is|moved|has|loves|likes|enjoys|hates|studies|speaks|plays|just|recently|got|was|joined|started|no longer|does not|did not|turned|owns|drives)\b.*)$"
)
_ADVERBS = re.compile(
    r"^(?:just|currently|now|recently|also|really|actually|still|finally|officially|absolutely|"
    r"totally|kind of|kinda|sort of|definitely|truly|mostly|usually|generally|basically|honestly|"
    r"already|even|both|proudly|happily|mainly|only|literally|seriously)\s+",
    re.IGNORECASE,
)
_STRONG_NEG = (
    re.compile(r"^no longer\s+(?P<vp>.+)$", re.IGNORECASE),
    re.compile(r"^used to\s+(?P<vp>.+)$", re.IGNORECASE),
    re.compile(
        r"^(?P<aux>am|is|are|was|were) not\s++(?P<vp>.*?\S)\s+(?:anymore|any more|any longer)\b.*$",
        re.IGNORECASE,
    ),
    re.compile(
        r"^(?:do|does|did) not\s++(?P<vp>.*?\S)\s+(?:anymore|any more|any longer)\b.*$", re.IGNORECASE
    ),
    re.compile(r"^(?P<aux>am|is|are) no longer\s+(?P<vp>.+)$", re.IGNORECASE),
    re.compile(
        r"^(?:(?:have|has) )?(?:stopped|quit|gave up|given up)\s+(?P<vp>(?-i:[a-z]+ing)\b.*)$", re.IGNORECASE
    ),
    re.compile(r"^(?:do|does|will) not\s++(?P<vp>.*?\S)\s+again\b.*$", re.IGNORECASE),
)
_PLAIN_NEG = re.compile(r"^(?:(?P<aux>am|is|are)|do|does|did|have|has) not\s+(?P<vp>.+)$", re.IGNORECASE)
# Possessive runs of spaces, and a match starts only where a run of spaces starts: linear splitting.
_SPLIT_VP = re.compile(
    r"(?<!\s)(?:(?:\s*+,\s++|\s++)(?:and|but)\s++I\s+|\s*+,\s*+(?:and\s++)?I\s+"
    r"|\s*+(?:,\s*+)?\band\s++(?=(?:am|is|has|(?:work|live|like|love|enjoy|hate|speak|play|own)s?|have|"
    r"study|studies|moved|just|recently|currently|also|no longer|do not|will|allergic|married|based|from|vegan|"
    r"joined|started|switched|left|now|still|"
    r"vegetarian|a |an )\b))",
)
#: a verb of having whose object list an "and a ..." split cuts off ("I have a dog and a cat")
_HOLD = re.compile(r"^(have|has|got|own|owns|adopted|rescued)\s", re.IGNORECASE)
_VERB_START = re.compile(
    r"^(?:am|is|are|was|were|have|has|had|do|does|did|will|can|no|not|never|just|also|really|\w+(?:s|ed|ing))\b",
    re.IGNORECASE,
)


_ING = {
    "eating": "eat", "smoking": "smoke", "drinking": "drink", "working": "work", "living": "live",
    "playing": "play", "running": "run", "using": "use", "dating": "date", "seeing": "see",
    "taking": "take", "liking": "like", "loving": "love", "driving": "drive", "studying": "study",
    "learning": "learn", "following": "follow", "owning": "own", "having": "have",
}  # fmt: skip


def _ing_to_base(vp: str) -> str:
    """'eating meat' -> 'eat meat' (after "stopped")."""
    first, _, rest = vp.partition(" ")
    word = _ING.get(first.lower(), first[:-3] if first.lower().endswith("ing") else first)
    return f"{word} {rest}".strip()


#: predicates whose value is a thing or an act the speaker names; a listener's thing is none of theirs
_TOLD_THINGS = frozenset({"likes", "dislikes", "goal", "plans", "learning"})


@dataclass
class Clause:
    subject: str
    subject_name: str
    is_self: bool
    vp: str  # verb phrase after the subject, negation removed, adverbs stripped
    sentence: str  # the whole normalized sentence (for possessive patterns: "my name is ...")
    negated: bool = False  # strong: "no longer", "not ... anymore", "stopped"
    plain_negation: bool = False  # "do not like", "am not ..."
    user: str = "ent:user"  # the subject of first-person statements


@dataclass
class Collector:
    reference: datetime
    #: how a fact about the first person names them: "User", or a named speaker ("Melanie")
    speaker: str = "User"
    entities: dict[str, Entity] = field(default_factory=dict)
    source_text: str | None = None
    #: every draft recorded, repeats included, in the order said (a sentence's own are its tail)
    said: list[FactDraft] = field(default_factory=list)
    #: the facts by (subject, predicate, folded object, negated), in the order said; a fact said again
    #: after another of its kind ("I'm 30. Sorry, I'm 31. No, I'm 30.") is moved after it
    _drafts: dict[tuple[str, str, str, bool], FactDraft] = field(default_factory=dict)
    #: where each fact stands (a count of placements), and the last placement of each (subject, kind)
    _placed_at: dict[tuple[str, str, str, bool], int] = field(default_factory=dict)
    _kind_last: dict[tuple[str, str], int] = field(default_factory=dict)

    @property
    def facts(self) -> list[FactDraft]:
        return list(self._drafts.values())

    def entity(self, name: str, type_: str, confidence: float = 0.8, **attributes: object) -> str:
        ent = make_entity(name, type_, confidence, **attributes)
        existing = self.entities.get(ent.entity_id)
        if existing is None or (existing.type == "other" and type_ != "other"):
            self.entities[ent.entity_id] = ent
        return ent.entity_id

    def relative(
        self, clause: Clause, rel: str, name: str, confidence: float = 0.85, *, subject: str | None = None
    ) -> str | None:
        """The speaker's `rel` called `name` (without the possessive it was read with: "my brother
        Michael's wife"): its entity id, after the entity and the relation fact; None for no person's name.
        `subject`: whose relation, when not the clause's subject ("Tom is my boyfriend": the speaker's)."""
        name = own_name(name)
        if not is_person_name(name):
            return None
        pid = self.entity(name, "person", 0.85, relation=rel.lower())
        self.fact(clause, RELATIONS[rel.lower()], pid, object_type="entity", object_name=name,
                  confidence=confidence, subject=subject)  # fmt: skip
        return pid

    def fact(
        self,
        clause: Clause,
        predicate: str,
        value: str | int | float | None,
        *,
        object_type: DraftObjectType | None = None,
        object_name: str | None = None,
        unit: str | None = None,
        confidence: float = 0.8,
        negated: bool | None = None,
        event_date: str | None = None,
        sensitivity: DraftSensitivity | None = None,
        subject: str | None = None,
        subject_name: str | None = None,
    ) -> None:
        pred = canonical(predicate)
        spec = spec_for(pred)
        otype: DraftObjectType = object_type or spec.object_type
        if (
            pred in _TOLD_THINGS
            and isinstance(value, str)
            and (speaks_to_listener(value) or points_back(value) or asks_the_talk(value))
        ):
            return  # a compliment, the talk itself ("hear your thoughts", "ask about it") or "more about it"
        subj = subject or clause.subject
        subj_name = subject_name or clause.subject_name
        if subj == clause.user:  # the speaker, named as the turn names them, their words in the third person
            subj_name = self.speaker
            if otype == "string" and isinstance(value, str):
                value = third_person(value)
                object_name = None if object_name is None else third_person(object_name)
        if value is None:  # a negation of whatever value the key holds ("I don't live there anymore")
            name = ""
        elif object_name is not None:
            name = object_name
        elif otype == "date":
            name = human_date(str(value))
        else:
            name = str(value)
        neg = clause.negated if negated is None else negated
        if neg and not clause.negated:
            confidence = min(confidence, 0.6)
        draft = FactDraft(
            subject=subj,
            predicate=pred,
            object=value,
            object_type=otype,
            object_name=name,
            unit=unit or (spec.default_unit if otype == "number" else None),
            negated=neg,
            confidence=confidence,
            text=any_value(subj_name, pred) if value is None else render(subj_name, pred, name, negated=neg),
            sensitivity=sensitivity or ("pii" if spec.pii else "none"),
            subject_name=subj_name,
            event_date=event_date,
            source_text=self.source_text,
        )
        key = (draft.subject, draft.predicate, str(draft.object).casefold(), draft.negated)
        self.said.append(draft)
        kind = (draft.subject, min(pred, spec.contrary or pred))  # a stance and its contrary are one kind
        held = self._placed_at.get(key)
        if held is not None and self._kind_last.get(kind, 0) <= held:
            return  # said again with nothing of its kind since: it stays where it was first said
        self._drafts[key] = self._drafts.pop(key, draft)  # a repeat keeps the draft first said
        self._placed_at[key] = self._kind_last[kind] = len(self.said)


def _strip_adverbs(vp: str) -> str:
    previous = None
    while previous != vp:
        previous = vp
        vp = _ADVERBS.sub("", vp)
        vp = re.sub(
            r"^(am|is|are)\s+(?:just|currently|now|also|really|still|finally|officially)\s+",
            r"\1 ",
            vp,
            flags=re.I,
        )
    return vp


def _negation(vp: str) -> tuple[str, bool, bool]:
    for pattern in _STRONG_NEG:
        m = pattern.match(vp)
        if m:
            inner = m.group("vp")
            aux = m.groupdict().get("aux")
            if "stopped" in m.group(0)[:12].lower() or re.match(
                r"^(?:have |has )?(?:quit|gave up|given up)", vp, re.I
            ):
                inner = _ing_to_base(inner)
            if not aux and re.match(r"^be\s", inner, re.I):  # "used to be a nurse", "stopped being vegan"
                aux, inner = "am", inner[3:]
            return (f"{aux} {inner}" if aux else inner), True, False
    m = _PLAIN_NEG.match(vp)
    if m:
        aux = m.group("aux")
        return (f"{aux} {m.group('vp')}" if aux else m.group("vp")), False, True
    if re.match(r"^never\s+", vp, re.I):
        return vp[6:], False, True
    return vp, False, False


def make_clauses(sentence: str, user: str, collector: Collector) -> list[Clause]:
    """The clauses of one (already normalized, statement-only) sentence."""
    s = _LEAD.sub("", sentence).strip()
    s = s.rstrip(" .!")
    me = collector.speaker
    subject, subject_name, is_self, vp = user, me, True, ""
    m = _SELF.match(s) or _JOINT.match(s)
    if m and m.groupdict().get("name") and not is_person_name(m.group("name")):
        m = None
    if m:
        vp = m.group("vp")
    else:
        m2 = _MY_REL.match(s) or _APPOS.match(s)
        m3 = _OTHER.match(s) if not m2 else None
        pid = None
        if m2:  # "My sister Anna lives in Rome": Anna is the user's sister, and the rest is about her
            base = Clause(user, me, True, "", sentence, user=user)
            pid = collector.relative(base, m2.group("rel"), m2.group("name"))
        if m2 and pid is not None:
            subject, subject_name, is_self, vp = pid, own_name(m2.group("name")), False, m2.group("vp")
            joint = re.match(r"^and I\s+(?P<vp>.+)$", vp)
            if joint:  # "My wife Sarah and I live in Denver": the rest is about the user too
                subject, subject_name, is_self, vp = user, me, True, joint.group("vp")
        elif m3 and is_person_name(m3.group("name")):
            name = m3.group("name")
            subject, subject_name, is_self, vp = (
                collector.entity(name, "person", 0.7),
                name,
                False,
                m3.group("vp"),
            )
        else:
            # possessive and other sentence-level patterns still see the sentence
            return [Clause(user, me, True, "", sentence, user=user)]
    clauses: list[Clause] = []
    parts = _SPLIT_VP.split(vp)
    aux = re.match(r"^(am|is|are)\s", parts[0].strip())
    held = _HOLD.match(parts[0].strip())
    for i, part in enumerate(parts):
        part = _strip_adverbs(part.strip())
        if (
            i > 0
            and aux
            and not _VERB_START.match(part)
            and not re.match(r"^(?:love|like|live|work|speak|play|own|eat|hate)\b", part)
        ):
            part = f"{aux.group(1)} {part}"  # "I'm vegan and allergic to soy"
        elif i > 0 and held and re.match(r"^an?\s", part, re.IGNORECASE):
            part = f"{held.group(1)} {part}"  # "I have a dog and a cat"
        inner, strong, plain = _negation(part)
        inner = _strip_adverbs(inner)
        # the sentence-level patterns read the sentence once, with the first clause: once per clause
        # would read it as many times as "and I ..." repeats (quadratic)
        whole = sentence if i == 0 else ""
        clauses.append(Clause(subject, subject_name, is_self, inner, whole, strong, plain, user))
    return clauses


def person_entity(collector: Collector, name: str) -> str:
    if is_person_name(name):
        return collector.entity(name, "person")
    return entity_id(name)
