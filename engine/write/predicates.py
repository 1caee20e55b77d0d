"""The predicate registry: what each fact predicate means and whether it holds one value at a time.

Supersession reads `single_valued`: a single-valued predicate (lives_in, works_at, age, ...) keeps one
active value per subject, so a new value supersedes the old one; a multi-valued predicate (likes,
has_pet, ...) accumulates values and only an explicit negation ends one, or a statement of its contrary
(a dislike of jazz ends a like of jazz).

Names are canonicalized first (`canonical`): aliases such as `moved_to` -> `lives_in` or
`married_to` -> `spouse` map onto the registered name, so the conflict key `<subject>|<predicate>`
is the same whichever word the writer used. Unknown predicates are allowed (batch upserts may carry
any predicate): `favorite_<thing>` is single-valued, every other unknown name is multi-valued, which
never hides a value it was not told to replace.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Literal

import msgspec

PredicateObjectType = Literal["string", "number", "date", "entity"]


class PredicateSpec(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    single_valued: bool
    object_type: PredicateObjectType = "string"
    description: str = ""
    #: how a fact renders as text: "{subject} lives in {object}"
    template: str = ""
    #: contact details and the like: memories get sensitivity "pii"
    pii: bool = False
    #: unit a bare number takes (age -> "years"); the template leaves it to the value ("{s} is {o} old")
    default_unit: str | None = None
    #: the predicate that says the opposite of the same value (likes / dislikes): a new value of either
    #: ends the other's current statement of it
    contrary: str | None = None
    #: values name a kind, then the one meant ("cat named Tom", "Tesla Model 3"): a negation of the kind
    #: alone ("I no longer have a cat") ends every value of that kind
    by_kind: bool = False


def _p(
    name: str,
    single: bool,
    otype: PredicateObjectType,
    template: str,
    description: str,
    *,
    pii: bool = False,
    unit: str | None = None,
    contrary: str | None = None,
    by_kind: bool = False,
) -> PredicateSpec:
    return PredicateSpec(
        name=name,
        single_valued=single,
        object_type=otype,
        template=template,
        description=description,
        pii=pii,
        default_unit=unit,
        contrary=contrary,
        by_kind=by_kind,
    )


_SPECS: tuple[PredicateSpec, ...] = (
    # identity
    _p("name", True, "string", "{s}'s name is {o}", "the subject's name"),
    _p("nickname", True, "string", "{s} goes by {o}", "what people call the subject"),
    _p("age", True, "number", "{s} is {o} old", "age in years", unit="years"),
    _p("birthday", True, "date", "{s}'s birthday is {o}", "date of birth (YYYY-MM-DD or --MM-DD)"),
    _p("birth_year", True, "number", "{s} was born in {o}", "year of birth"),
    _p("born_in", True, "entity", "{s} was born in {o}", "place of birth"),
    _p("from", True, "entity", "{s} is from {o}", "hometown or home country"),
    _p("nationality", True, "string", "{s} is {o}", "nationality"),
    _p("lives_in", True, "entity", "{s} lives in {o}", "current place of residence"),
    _p("speaks", False, "string", "{s} speaks {o}", "a language the subject speaks"),
    _p("learning", False, "string", "{s} is learning {o}", "something the subject is learning"),
    # work and study
    _p("works_at", True, "entity", "{s} works at {o}", "current employer"),
    _p("job_title", True, "string", "{s} works as {a} {o}", "current job title or profession"),
    _p("studies_at", True, "entity", "{s} studies at {o}", "current school or university"),
    _p("studies", True, "string", "{s} studies {o}", "field of study"),
    # family and relations
    _p("spouse", True, "entity", "{s} is married to {o}", "husband or wife"),
    _p("partner", True, "entity", "{s}'s partner is {o}", "partner, girlfriend or boyfriend"),
    _p("marital_status", True, "string", "{s} is {o}", "married, single, divorced, ..."),
    _p("has_child", False, "entity", "{s} has a child named {o}", "a child"),
    _p("children_count", True, "number", "{s} has {o} children", "number of children"),
    _p("has_sibling", False, "entity", "{s} has a sibling named {o}", "a brother or sister"),
    _p("has_parent", False, "entity", "{s}'s parent is {o}", "mother or father"),
    _p("has_friend", False, "entity", "{s} has a friend named {o}", "a friend"),
    _p("has_colleague", False, "entity", "{s} has a colleague named {o}", "a coworker"),
    _p(
        "has_relative",
        False,
        "entity",
        "{s} has a relative named {o}",
        "a cousin, aunt, uncle, grandparent, ...",
    ),
    _p("has_pet", False, "string", "{s} has {a} {o}", "a pet", by_kind=True),
    # preferences and habits
    _p("likes", False, "string", "{s} likes {o}", "something the subject likes", contrary="dislikes"),
    _p("dislikes", False, "string", "{s} dislikes {o}", "something the subject dislikes", contrary="likes"),
    _p("allergic_to", False, "string", "{s} is allergic to {o}", "an allergy"),
    _p("diet", True, "string", "{s} follows {a} {o} diet", "diet (vegetarian, vegan, keto, ...)"),
    _p("eats", False, "string", "{s} eats {o}", "a food the subject eats", contrary="avoids"),
    _p("avoids", False, "string", "{s} avoids {o}", "a food or thing the subject avoids", contrary="eats"),
    _p("plays", False, "string", "{s} plays {o}", "a sport, game or instrument"),
    _p("hobby", False, "string", "{s}'s hobby is {o}", "a hobby"),
    _p("owns", False, "string", "{s} owns {o}", "a product or vehicle the subject owns", by_kind=True),
    # goals and plans
    _p("goal", False, "string", "{s} wants to {o}", "a goal"),
    _p("plans", False, "string", "{s} plans to {o}", "a plan"),
    # quantities
    _p("budget", True, "number", "{s}'s budget is {o}", "a spending budget"),
    _p("rent", True, "number", "{s}'s rent is {o}", "rent paid"),
    _p("salary", True, "number", "{s} earns {o}", "income"),
    _p("weight", True, "number", "{s} weighs {o}", "body weight"),
    _p("height", True, "number", "{s} is {o} tall", "height"),
    # contact details
    _p("email", True, "string", "{s}'s email is {o}", "email address", pii=True),
    _p("phone", True, "string", "{s}'s phone number is {o}", "phone number (E.164)", pii=True),
)

PREDICATES: Mapping[str, PredicateSpec] = {spec.name: spec for spec in _SPECS}

ALIASES: Mapping[str, str] = {
    "moved_to": "lives_in",
    "lives_at": "lives_in",
    "location": "lives_in",
    "city": "lives_in",
    "resides_in": "lives_in",
    "employer": "works_at",
    "works_for": "works_at",
    "employed_by": "works_at",
    "job": "job_title",
    "occupation": "job_title",
    "profession": "job_title",
    "title": "job_title",
    "married_to": "spouse",
    "wife": "spouse",
    "husband": "spouse",
    "girlfriend": "partner",
    "boyfriend": "partner",
    "child": "has_child",
    "kid": "has_child",
    "pet": "has_pet",
    "loves": "likes",
    "enjoys": "likes",
    "hates": "dislikes",
    "allergy": "allergic_to",
    "allergies": "allergic_to",
    "hometown": "from",
    "date_of_birth": "birthday",
    "dob": "birthday",
    "email_address": "email",
    "phone_number": "phone",
    "mobile": "phone",
    "wants_to": "goal",
    "plans_to": "plans",
    "first_name": "name",
    "full_name": "name",
}

_FAVORITE = re.compile(r"^favou?rite_([a-z0-9_]+)$")
#: one favorite, however it is spelled: "favourite colour" is the favorite color
_US_SPELLING = {
    "colour": "color", "colours": "colors", "flavour": "flavor", "flavours": "flavors", "theatre": "theater",
    "programme": "program", "jewellery": "jewelry", "neighbourhood": "neighborhood", "humour": "humor",
}  # fmt: skip


def canonical(name: str) -> str:
    """The registered name for `name` (aliases resolved, lower-cased, spaces and dashes as `_`)."""
    key = re.sub(r"[\s\-]+", "_", name.strip().lower())
    key = ALIASES.get(key, key)
    m = _FAVORITE.match(key)
    if m:
        thing = "_".join(_US_SPELLING.get(w, w) for w in m.group(1).split("_"))
        return f"favorite_{thing}"
    return key


def _literal(text: str) -> str:
    """`text` inside a str.format template: its braces are not fields."""
    return text.replace("{", "{{").replace("}", "}}")


def spec_for(name: str) -> PredicateSpec:
    """The spec of a (canonicalized) predicate; unknown names get a permissive default."""
    key = canonical(name)
    spec = PREDICATES.get(key)
    if spec is not None:
        return spec
    m = _FAVORITE.match(key)
    if m:
        thing = m.group(1).replace("_", " ")
        return PredicateSpec(
            name=key,
            single_valued=True,
            object_type="string",
            template=f"{{s}}'s favorite {_literal(thing)} is {{o}}",
            description=f"favorite {thing}",
        )
    return PredicateSpec(
        name=key,
        single_valued=False,
        object_type="string",
        template=f"{{s}} {_literal(key.replace('_', ' '))} {{o}}",
        description="unregistered predicate (multi-valued)",
    )


def is_single_valued(name: str) -> bool:
    return spec_for(name).single_valued


#: the longest conflict key (the API's limit on `keys` items)
MAX_KEY = 128
#: hex digits of the digest that stands for the rest of an over-long subject or predicate in a key
KEY_DIGEST = 24


def _fit(part: str, width: int) -> str:
    """`part` when it fits `width` characters, else its start, `~` and a digest of all of it: two long
    parts that share a start stay apart."""
    if len(part) <= width:
        return part
    digest = hashlib.sha256(part.encode()).hexdigest()[:KEY_DIGEST]
    return f"{part[: width - KEY_DIGEST - 1]}~{digest}"


def conflict_key(subject: str, predicate: str) -> str:
    """`<subject>|<predicate>` with the predicate canonicalized, at most `MAX_KEY` characters. A key
    never loses its predicate: an over-long subject (or predicate) is shortened by `_fit`, so distinct
    (subject, predicate) pairs keep distinct keys."""
    name = canonical(predicate)
    room = MAX_KEY - 1  # the "|"
    who = _fit(subject, max(room - len(name), room // 2))
    return f"{who}|{_fit(name, room - len(who))}"


def any_value(subject_name: str, predicate: str) -> str:
    """The text of a negation that names no value: any_value("User", "works_at") -> "No longer true:
    User's current employer"."""
    what = re.sub(r"^(?:an?|the subject's|the) ", "", spec_for(predicate).description)
    return f"No longer true: {subject_name}'s {what}"


#: a value written as a number alone, which takes its predicate's default unit when rendered
_BARE_NUMBER = re.compile(r"[+-]?[\d.,]+")


def render(subject_name: str, predicate: str, object_text: str, *, negated: bool = False) -> str:
    """A readable sentence for a fact: render("User", "lives_in", "Berlin") -> "User lives in Berlin";
    render("User", "age", "30") -> "User is 30 years old", render("User", "age", "18 months") -> "User
    is 18 months old" (a value that names its unit keeps it)."""
    spec = spec_for(predicate)
    if spec.default_unit and _BARE_NUMBER.fullmatch(object_text):
        object_text = f"{object_text} {spec.default_unit}"
    article = "an" if object_text[:1].lower() in "aeiou" and object_text[:1] else "a"
    text = spec.template.format(s=subject_name, o=object_text, a=article)
    if negated:
        return f"No longer true: {text}"
    return text
