"""Family and relations: spouse, partner, marital status, children, siblings, parents, friends, and
pets. "My sister Anna lives in Rome" (relation + third-person subject) is split in `clauses`; this
module covers "I'm married to Sarah", "my husband's name is John", "I have two kids", "I have a dog
named Max", "my cat Luna ...", ..."""

from __future__ import annotations

import re

from engine.extract.rules.clauses import RELATIONS, Clause, Collector
from engine.extract.rules.entities import is_given_name, is_person_name
from engine.extract.rules.quantities import NUMBER_WORDS, word_number
from engine.extract.rules.text import own_name
from engine.letters import NAME_CHAR, UPPER

_NAME = rf"(?P<n>(?-i:{UPPER}{NAME_CHAR}{{1,40}}(?:\s+{UPPER}{NAME_CHAR}{{1,40}})?))"
_REL = "|".join(sorted(RELATIONS, key=len, reverse=True))
PETS = (
    "dog|cat|puppies|puppy|kitten|rabbit|bunny|hamster|parrot|bird|fish|goldfish|turtle|tortoise|horse|"
    "guinea pig|ferret|snake|lizard|gecko|golden retriever|labrador|lab|beagle|poodle|corgi|"
    "dachshund|husky|terrier|bulldog|german shepherd|border collie|tabby|chihuahua|pug"
)
#: a pet's word that names a plant is no pet ("a snake plant", "my Snake Plant"); "puppy training" or "a
#: new dog bed" still says there is one
_NOT_A_PET = r"(?![ -](?i:plants?)\b)"
_PET_SINGULAR = {
    "puppy": "puppy",
    "puppies": "puppy",
    "kittens": "kitten",
    "fish": "fish",
    "goldfish": "goldfish",
}

_MARRIED_TO = re.compile(
    rf"^(?:am|is|got|have been|has been) (?P<k>married|engaged) to {_NAME}", re.IGNORECASE
)
_DATING = re.compile(
    rf"^(?:(?:am|is|have been|has been) (?:dating|seeing|in a relationship with)"
    rf"|(?:have |has )?(?:started|begun|began) (?:dating|seeing|going out with))"
    rf" (?:(?:a (?:guy|girl|man|woman|boy|lady)|someone) (?:called|named) )?{_NAME}"
)
_TOGETHER = re.compile(
    rf"^{_NAME} and I (?:are|have been|got|just got) (?:now |officially |back )?"
    r"(?P<k>together|a couple|dating|an item|engaged|married)\b"
)
_BROKE_UP = re.compile(
    rf"^(?:have |has )?(?:(?:broke|broken|split) up with|dumped|(?P<d>divorced|separated from)) {_NAME}"
)
_SPLIT_WITH = re.compile(
    rf"^{_NAME} and I (?:have )?(?:broke up|split up|(?P<d>separated|got divorced|got separated)|split|"
    r"called it quits)\b"
)
#: the partner one has, named: "I have a boyfriend named Jake"
_HAVE_PARTNER = re.compile(
    rf"^(?:have|has) an? (?:new )?(?P<r>boyfriend|girlfriend|partner|wife|husband|fiance|fiancee)(?: now)?,? "
    rf"(?:named|called|(?:his|her|their) name is) {_NAME}",
    re.IGNORECASE,
)
_PET_GONE = re.compile(
    rf"^(?:had to |have had to |just |recently )?(?:rehome|rehomed|re-home|re-homed|give away|gave away|gave up|"
    rf"give up|put down|had to put down) (?:our|my) (?:\w+ )?(?P<k>{PETS})(?: {_NAME})?\b",
    re.IGNORECASE,
)
_PET_AWAY = re.compile(
    rf"^(?:had to |have had to |just |recently )?(?:gave|give|have given) (?:our|my) (?:\w+ )?(?P<k>{PETS})"
    rf"(?: {_NAME})? away\b",
    re.IGNORECASE,
)
_STATUS = re.compile(
    r"^(?:am|is|got|have been|has been) (?:happily |recently |newly )?(?P<k>married|single|divorced|widowed|engaged|separated)"
    r"(?: (?:again|now|officially|these days))?$",
    re.IGNORECASE,
)
_KIDS = re.compile(
    rf"^(?:have|has) (?P<c>\d+|{NUMBER_WORDS}) (?:kids|children|sons|daughters|boys|girls)\b", re.IGNORECASE
)
_CHILD_NAMED = re.compile(
    rf"^(?:have|has|had) an? (?:\d+[- ]year[- ]old |baby |little |new |newborn )?(?P<r>son|daughter|kid|child|boy|girl) (?:named|called) {_NAME}",
    re.IGNORECASE,
)
_SIB_NAMED = re.compile(
    rf"^(?:have|has) an? (?:older |younger |little |big |twin )?(?P<r>sister|brother|sibling) (?:named|called) {_NAME}",
    re.IGNORECASE,
)
_MY_REL_NAME = re.compile(
    rf"\b[Mm]y (?:older |younger |little |big |new |current )?(?P<r>{_REL})(?:'s name is| is (?:named|called)| is) {_NAME}(?=\s*(?:[,;.!]|$)|\s+(?:now|these days)\b)",
    re.IGNORECASE,
)
#: a pet after its count or article: its kind, and its name when given
_PET_TAIL = (
    rf"(?:new |little |young |old |rescue |black |white |orange |grey |gray )?(?P<k>{PETS})(?:s|es)?{_NOT_A_PET}"
    rf"(?: (?:named|called) {_NAME})?\b"
)
_HAVE_PET = re.compile(
    r"^(?:have|has|got|adopted|own|owns|rescued|just got) (?:an? |one |two |three |\d+ |a new |two new |another |a second |a third )?"
    + _PET_TAIL,
    re.IGNORECASE,
)
#: the next pet of a list after one `_HAVE_PET` matched ("a dog, a cat and a parrot named Polly")
_AND_PET = re.compile(r"(?:,? and |, )(?:an? |one |two |three |\d+ |another )?" + _PET_TAIL, re.IGNORECASE)
_PET_DIED = re.compile(
    rf"\b(?:our|my) (?:old |beloved |sweet |little )?(?P<k>{PETS})(?:,? {_NAME},?)? (?:passed away|died|passed on|"
    rf"was put down|had to be put down|crossed the rainbow bridge)\b",
    re.IGNORECASE,
)
#: the verb phrase of "Tom is my boyfriend", "Ana is my sister": a relation of the speaker's
_IS_MY_REL = re.compile(
    rf"^is my (?:older |younger |little |big |new |current )?(?P<r>{_REL})(?: now)?[.!]*$", re.IGNORECASE
)
_MY_PET = re.compile(
    rf"\bmy (?:\w+ )?(?P<k>{PETS}){_NOT_A_PET}(?:'s name is| is (?:named|called)|,)? {_NAME}\b", re.IGNORECASE
)


def _pet(out: Collector, clause: Clause, kind: str, name: str | None, *, negated: bool | None = None) -> None:
    kind = _PET_SINGULAR.get(kind.lower(), kind.lower())
    name = own_name(name) if name else name
    if name and is_given_name(name):  # a pet may bear a place's or a product's name
        out.entity(name, "pet", 0.8, species=kind)
        out.fact(clause, "has_pet", f"{kind} named {name}", confidence=0.85, negated=negated)
    else:
        out.fact(clause, "has_pet", kind, confidence=0.8, negated=negated)


def _self_statements(clause: Clause, out: Collector) -> None:
    """Sentence-level: "my husband's name is ...", "my dog Max", and (without a verb phrase) a pet
    that died, "Sam and I are together", "Sam and I split up"."""
    s, vp = clause.sentence, clause.vp
    m = _MY_REL_NAME.search(s.rstrip(" .!"))
    if m:
        out.relative(clause, m.group("r"), m.group("n"), 0.9)
    m = _MY_PET.search(s)
    if m:
        _pet(out, clause, m.group("k"), m.group("n"), negated=False)
    m = _PET_DIED.search(s)
    if m and not vp:
        _pet(out, clause, m.group("k"), m.group("n"), negated=True)
    m = _TOGETHER.match(s.rstrip(" .!"))
    if m:
        married = m.group("k") == "married"
        out.relative(clause, "wife" if married else "partner", m.group("n"), 0.8)
    m = _SPLIT_WITH.match(s.rstrip(" .!"))
    if m and is_person_name(m.group("n")):  # "Sam and I split up" reads as "we split up" too
        _split(out, clause, m.group("n"), married=bool(m.group("d")))


def _partner(clause: Clause, out: Collector, vp: str) -> None:
    """Married or engaged to, dating, and marital status."""
    m = _MARRIED_TO.match(vp)
    if m:
        rel = "wife" if m.group("k").lower() == "married" else "fiance"
        out.relative(clause, rel, m.group("n"), 0.9)
        out.fact(clause, "marital_status", m.group("k").lower(), confidence=0.85)
    m = _DATING.match(vp)
    if m:
        out.relative(clause, "partner", m.group("n"), 0.8)
    m = _HAVE_PARTNER.match(vp)
    if m and clause.is_self:
        out.relative(clause, m.group("r").lower(), m.group("n"), 0.85)
    m = _STATUS.match(vp)
    if m:
        status = m.group("k").lower()
        out.fact(clause, "marital_status", status, confidence=0.85)
        ended = status in ("single", "divorced", "widowed") or (clause.negated and status == "married")
        named = _SPLIT_WITH.match(clause.sentence.rstrip(" .!"))  # "Sam and I got divorced" ends Sam
        if clause.is_self and ended and not named:
            out.fact(clause, "spouse", None, confidence=0.7, negated=True)  # no one is the spouse any more
        if clause.is_self and not clause.negated and status == "single":
            out.fact(clause, "partner", None, confidence=0.7, negated=True)


def _children_and_siblings(clause: Clause, out: Collector, vp: str) -> None:
    m = _KIDS.match(vp)
    if m:
        n = word_number(m.group("c"))
        if n is not None:
            out.fact(clause, "children_count", n, object_name=str(n), unit=None, confidence=0.85)
    m = _CHILD_NAMED.match(vp)
    if m:
        out.relative(clause, "child", m.group("n"), 0.85)
    m = _SIB_NAMED.match(vp)
    if m:
        out.relative(clause, m.group("r"), m.group("n"), 0.85)


#: what one no longer has, any of it: "I don't have any pets anymore", "I don't have a girlfriend anymore"
_HAVE_NONE = re.compile(
    r"^(?:have|has|own|owns) (?:any |a |an )?(?:(?P<pets>pets?)|(?P<p>girlfriend|boyfriend|partner)"
    r"|(?P<s>wife|husband|spouse))$",
    re.IGNORECASE,
)


def _pets_and_break_ups(clause: Clause, out: Collector, vp: str) -> None:
    """A pet one has or gave away, and a partner one broke up with."""
    m = _HAVE_NONE.match(vp) if clause.negated and clause.is_self else None
    if m:
        predicate = "has_pet" if m.group("pets") else "partner" if m.group("p") else "spouse"
        out.fact(clause, predicate, None, confidence=0.7)
    m = _HAVE_PET.match(vp)
    while m:
        _pet(out, clause, m.group("k"), m.group("n"))
        m = _AND_PET.match(vp, m.end())
    m = _PET_GONE.match(vp) or _PET_AWAY.match(vp)
    if m and clause.is_self and not clause.negated:
        _pet(out, clause, m.group("k"), m.group("n"), negated=True)
    m = _BROKE_UP.match(vp)
    if m and clause.is_self and not clause.negated and is_person_name(m.group("n") or ""):
        _split(out, clause, m.group("n"), married=bool(m.group("d")))


def _split(out: Collector, clause: Clause, name: str, *, married: bool) -> None:
    """A break-up ends the partner; a divorce or separation ends the spouse."""
    out.fact(clause, "spouse" if married else "partner", out.entity(name, "person"), object_type="entity",
             object_name=name, negated=True, confidence=0.75)  # fmt: skip


def _named_relation(clause: Clause, out: Collector) -> None:
    """ "Tom is my boyfriend": the speaker's relation, named by the clause's subject."""
    m = _IS_MY_REL.match(clause.vp)
    if m:  # "Tom is no longer my boyfriend" ends him
        out.relative(clause, m.group("r"), clause.subject_name, 0.85, subject=clause.user)


def extract(clause: Clause, out: Collector) -> None:
    if clause.is_self:
        _self_statements(clause, out)
    vp = clause.vp
    if not vp or clause.plain_negation:
        return
    if not clause.is_self:
        _named_relation(clause, out)
    _partner(clause, out, vp)
    _children_and_siblings(clause, out, vp)
    _pets_and_break_ups(clause, out, vp)
