"""Preferences and habits: likes, dislikes, favorites, allergies, diet, what one eats or avoids,
what one plays, hobbies and the products one owns.

"I don't like X" is a dislike (a positive fact about a dislike); "I don't like X anymore" is a
negation that ends `likes X`. "I don't eat meat anymore" ends `eats meat` and states `avoids meat`."""

from __future__ import annotations

import re

from engine.extract.rules.clauses import Clause, Collector
from engine.extract.rules.dates import before_date
from engine.extract.rules.entities import is_org, is_product
from engine.extract.rules.text import (
    REASON,
    SPACED_DASH,
    clean_object,
    split_list,
    strip_article,
    without_dangling,
)

_LIKES = re.compile(
    r"^(?:like|likes|love|loves|enjoy|enjoys|adore|adores|am into|is into|am (?:a )?(?:big |huge |massive )?fan of|"
    r"is (?:a )?(?:big |huge )?fan of|am passionate about|am obsessed with|am crazy about|prefer|prefers|"
    # a stance one came to: "I've started liking mushrooms"
    r"(?:have |has )?(?:started|begun|began|come|came|grown|grew) (?:liking|loving|enjoying|to like|to love|to enjoy)) "
    r"(?P<o>.+)$",
    re.IGNORECASE,
)
_DISLIKES = re.compile(
    r"^(?:dislike|dislikes|hate|hates|detest|detests|loathe|can not stand|can not bear|am not a fan of) (?P<o>.+)$",
    re.IGNORECASE,
)
_FAV = re.compile(
    r"\bmy (?:all[- ]time |absolute )?favou?rite (?P<c>[a-z]+(?: [a-z]+)?) (?:is|are) (?!not\b)(?P<o>.+)$",
    re.IGNORECASE,
)
_FAV_REV = re.compile(
    r"^(?P<o>[^,]+?) (?:is|are) my (?:all[- ]time |absolute )?favou?rite (?P<c>[a-z]+(?: [a-z]+)?)$",
    re.IGNORECASE,
)
_ALLERGIC = re.compile(
    r"^(?:am|is) (?:severely |very |mildly |deathly |super |also )?(?:allergic|intolerant) to (?P<o>.+)$",
    re.IGNORECASE,
)
_ALLERGY = re.compile(
    r"^(?:have|has) (?:an? )?(?:severe |mild |bad |serious )?(?!(?:an?|severe|mild|bad|serious) (?:allerg|intoler))(?P<o>[a-z][a-z ]*?) (?:allergy|allergies|intolerance)\b",
    re.IGNORECASE,
)
_ALLERGY_TO = re.compile(
    r"^(?:have|has|have developed|has developed|developed) (?:an? )?(?:severe |mild |bad |serious |new )?"
    r"(?:allergy|allergies|intolerance|sensitivity) to (?P<o>.+)$",
    re.IGNORECASE,
)
_INTO = re.compile(
    r"^(?:(?:have|has) (?:been )?(?:really |totally |seriously )?(?:gotten|getting)|(?:am|is) (?:really )?getting|"
    r"got (?:really|seriously|totally|heavily|big) ) ?(?:really |totally |seriously |very )?into (?P<o>.+)$",
    re.IGNORECASE,
)
_NOT_INTERESTS = re.compile(
    r"^(?:trouble|debt|an? |the |my |college|university|school|grad|med|law|it\b|that\b|this\b|a fight|"
    r"an argument|character|shape|\d)",
    re.IGNORECASE,
)
_OVER = re.compile(
    r"^(?:am|is) (?:so |totally |completely |kind of |kinda |officially )?over (?P<o>[a-z][^,;]*)(?:[,;].*)?$",
    re.IGNORECASE,
)
_NOT_OVER = re.compile(r"^(?:the\b|it|that|this|him|her|them|there|here|budget|\d)", re.IGNORECASE)
_LOST_INTEREST = re.compile(
    r"^(?:have |has )?lost (?:all |my |any )?interest in (?P<o>[^,;]+)$", re.IGNORECASE
)
_DIETS = (
    r"vegetarian|vegan|pescatarian|pescetarian|keto|ketogenic|paleo|gluten[- ]free|kosher|halal|"
    r"flexitarian|low[- ]carb|dairy[- ]free|plant[- ]based|carnivore|mediterranean|intermittent fasting"
)
_DIET = re.compile(
    rf"^(?:am|is|went|go|have gone|became|have become|turned|have been|has been) (?:a |an |strictly |fully |mostly )?(?P<d>{_DIETS})\b"
    rf"|^(?:am|is) (?:on|doing|following) (?:a |an |the )?(?P<d2>{_DIETS})(?: diet)?\b"
    rf"|^(?:follow|follows|eat|eat a) (?:a |an )?(?P<d3>{_DIETS}) diet\b",
    re.IGNORECASE,
)
_DIET_LEFT = re.compile(
    rf"^(?:have |has )?(?:quit|gave up|given up|stopped|dropped|ditched) (?:the |my |being |doing |going |eating )?"
    rf"(?P<d>{_DIETS})(?: diet)?\b",
    re.IGNORECASE,
)
_INTOLERANT = re.compile(r"^(?:am|is) (?P<o>lactose|gluten) intolerant\b", re.IGNORECASE)
_EATS = re.compile(r"^(?:eat|eats|drink|drinks|consume) (?P<o>.+)$", re.IGNORECASE)
_PLAYS = re.compile(r"^(?:play|plays|(?:am|is) playing) (?:the )?(?P<o>.+)$", re.IGNORECASE)
_HOBBY = re.compile(
    r"\bmy (?:main |favorite )?hobb(?:y|ies) (?:is|are|include|includes) (?!not\b)(?P<o>.+)$", re.IGNORECASE
)
#: a pastime one began: "I've taken up bouldering", "I started doing yoga"
_TOOK_UP = re.compile(
    r"^(?:have |has )?(?:taken up|took up|take up|started doing|started practicing|started practising)"
    r" (?!(?:the|my|a|an|your|his|her|their|our|some|this|that|it|them|what|more|less)\b)(?P<o>.+)$",
    re.IGNORECASE,
)
#: a pastime one stopped: the verb phrase of "I've stopped doing yoga", "I don't do yoga anymore"
_DOING = re.compile(
    r"^(?:doing|practicing|practising|do) (?!(?:the|my|a|an|it|that|this|them)\b)(?P<o>.+)$", re.I
)
#: where an owned thing's name ends: a clause, a remark after a dash, what was done to it ("got my Camry
#: serviced"), or a word about the getting ("recently", "myself")
_OWNED_END = re.compile(
    rf",|(?<=\S)(?:\s+(?:and|but|because|which|that)\s|{SPACED_DASH}|\s*[\u2013\u2014]"
    r"|\s+(?:serviced|fixed|repaired|replaced|washed|detailed|inspected|cleaned|tuned|delivered|shipped)\b"
    r"|\s+(?:recently|myself|themselves)\b|\s+(?:yesterday|today|already|too|as well)\s*$)",
    re.IGNORECASE,
)
_OWNS = re.compile(
    r"^(?:drive|drives|own|owns|have|has|bought|got|use|ride) (?:an? |the |my )?(?:new |used |old |brand new )?(?P<o>.+)$",
    re.IGNORECASE,
)
#: objects that name no thing of their own; a lower-case pronoun, or "these / those ..." ("I like those
#: ideas"), points back at what was said ("US history" is a thing)
_SKIP_OBJECTS = re.compile(
    r"^(?:(?i:it|that|this|them|you|him|her|when|how|what|the idea|to think|being here)\b"
    r"|(?:me|us|everywhere|everything|everyone|everybody|anything|anyone|someone|these|those|ones?)(?:\s|$))"
)
_WHEN_ESPECIALLY = re.compile(
    r"^(?:especially|particularly)(?:$|\s+(?:during|on|in|at|for|from|with|when|since|if|after|before)\b)",
    re.IGNORECASE,
)
_ARTICLE_ONLY = re.compile(r"^(?:the|a|an|my|some)$", re.IGNORECASE)

#: an object that is a clause, whose parts are no things: "I love how it shows X and Y"
_CLAUSE_OBJECT = re.compile(r"^(?:how|what|when|where|why)\b")  # lower case: "What Do You Meme" is a game


#: an aside in a list of liked things, no thing of its own ("I don't like bowling itself, to be honest")
_ASIDE = re.compile(
    r"^(?:to be (?:honest|fair|frank|sure)|honestly|though|anyway|I (?:guess|think|mean))$", re.I
)
#: a verb makes a clause, not a thing ("I love action movies, the effects are so cool"; lower case: titles),
#: unless a relative pronoun or a gerund holds it ("books that are engaging", "making sure vets are fed")
_COPULA = re.compile(r"^(?!\S+ing\b)(?:(?!\b(?:that|which|who)\b).)*?\b(?:is|are|was|were)\b")
#: a thing "of" a pronoun is a part of what was said before: "the taste of these", "some of those ideas"
#: ("the food of this city" is a thing)
_OF_PRONOUN = re.compile(r"\bof (?:it|them|these|those)\b|\bof (?:this|that)$")


def _items(raw: str) -> list[str]:
    """The things of a list object. An object that is a clause ("how it shows X and Y") or a bare
    "to" ("I love to.") names none: its parts are not things one likes. After "to" the items that are
    verbs keep it ("I love to read" -> "to read"): a bare verb is no thing."""
    raw = raw.strip()
    to = re.match(r"^to(?:\s+|$)", raw)
    raw = raw[to.end() :] if to else raw
    if _CLAUSE_OBJECT.match(raw):
        return []
    items: list[str] = []
    for item in split_list(REASON.split(raw)[0]):
        if _WHEN_ESPECIALLY.match(item) or _ASIDE.match(item):
            continue  # "I love live shows, especially on a summer night": when, not another thing
        item = strip_article(
            re.sub(
                r"^(?:to|especially|particularly|both(?: of)?|either|also|like|such as|including)(?:\s+|$)",
                "",
                item,
                flags=re.IGNORECASE,
            )
        )
        item = re.sub(r"\s+(?:itself|themselves)$", "", item)
        item = re.sub(r"^sound of\s+(?:(?:the|a|an)\s+)?", "", item)  # "I like the sound of the lentil soup"
        if (
            item
            and not _SKIP_OBJECTS.match(item)
            and not _ARTICLE_ONLY.match(item)
            and not _OF_PRONOUN.search(item)
            and not _COPULA.search(item)
            and len(item.split()) <= 5
        ):
            items.append(f"to {item}" if to and not item.split()[0].endswith("ing") else item)
    return items


#: "It's my favorite comfort meal!" names the meal in another sentence: no value here
_PRONOUN = re.compile(r"^(?:it|this|that|these|those|they|them|he|she|one)$", re.IGNORECASE)


def _favorites(clause: Clause, out: Collector) -> None:
    s = clause.sentence
    m = _FAV.search(s) or _FAV_REV.match(s.rstrip(" .!"))
    if m:  # "my favorite" is always the speaker's
        obj = clean_object(REASON.split(m.group("o"))[0])
        cat = m.group("c").lower().replace(" ", "_")
        if not obj or len(obj.split()) > 6 or _PRONOUN.match(obj):
            return
        if re.search(r"\bone of\s+$", s[: m.start()], re.IGNORECASE):
            # "one of my favorite dishes is lasagna": one liked thing of several, not the favorite
            out.fact(clause, "likes", strip_article(obj), confidence=0.85, negated=False,
                     subject=clause.user)  # fmt: skip
        else:
            out.fact(clause, f"favorite_{cat}", strip_article(obj), confidence=0.9, negated=False,
                     subject=clause.user)  # fmt: skip


def _hobbies(clause: Clause, out: Collector) -> None:
    m = _HOBBY.search(clause.sentence)
    if m:
        for item in _items(m.group("o")):
            out.fact(clause, "hobby", item, confidence=0.85, negated=False)
    if not clause.is_self or clause.plain_negation:
        return
    stopped = _DOING.match(clause.vp) if clause.negated else None
    for found, negated in ((_TOOK_UP.match(clause.vp), False), (stopped, True)):
        if found:
            for item in _items(without_dangling(before_date(found.group("o"), out.reference)[0])):
                out.fact(clause, "hobby", item, confidence=0.75, negated=negated)


#: "neither tea nor coffee": each thing denied, as "I don't like tea or coffee" denies them
_NEITHER = re.compile(r"^neither (?P<a>.+?) nor (?P<b>.+)$", re.IGNORECASE)


def _neither(raw: str) -> str | None:
    """The things a "neither ... nor ..." object denies, as a list ("tea and coffee"); None for another."""
    m = _NEITHER.match(raw.strip())
    return f"{m.group('a')} and {m.group('b')}" if m else None


def _likes(clause: Clause, out: Collector, vp: str) -> None:
    """Likes and dislikes, what one is into, and what one is over."""
    m = _LIKES.match(vp)
    if m and (denied := _neither(m.group("o"))) is not None:
        if not clause.plain_negation and not clause.negated:
            for item in _items(denied):
                out.fact(clause, "dislikes", item, confidence=0.8)
    elif m:
        predicate = "dislikes" if clause.plain_negation else "likes"
        for item in _items(m.group("o")):
            out.fact(clause, predicate, item, confidence=0.8, negated=clause.negated)
    m = _DISLIKES.match(vp)
    if m and not clause.plain_negation:
        for item in _items(m.group("o")):
            out.fact(clause, "dislikes", item, confidence=0.8)
    m = _INTO.match(vp)
    if (
        m
        and not clause.plain_negation
        and not _NOT_INTERESTS.match(m.group("o"))
        and not is_org(m.group("o").split()[0])
    ):
        for item in _items(m.group("o")):
            out.fact(clause, "likes", item, confidence=0.75)
    m = _OVER.match(vp) or _LOST_INTEREST.match(vp)
    if m and not clause.plain_negation and not clause.negated and not _NOT_OVER.match(m.group("o")):
        for item in _items(m.group("o")):
            out.fact(clause, "likes", item, confidence=0.7, negated=True)


def _food(clause: Clause, out: Collector, vp: str) -> None:
    """Allergies and intolerances, diet, and what one eats, drinks or avoids."""
    m = _ALLERGIC.match(vp) or _ALLERGY_TO.match(vp) or _ALLERGY.match(vp)
    if m and not clause.plain_negation:
        for item in _items(m.group("o")):
            out.fact(clause, "allergic_to", item, confidence=0.9)
    m = _INTOLERANT.match(vp)
    if m and not clause.plain_negation:
        out.fact(clause, "allergic_to", m.group("o").lower(), confidence=0.8)
    _diet(clause, out, vp)
    m = _EATS.match(vp)
    if m and (denied := _neither(m.group("o"))) is not None:
        if not clause.plain_negation and not clause.negated:
            for item in _items(denied):
                out.fact(clause, "avoids", item, confidence=0.75)
    elif m:
        drink = vp.lower().startswith("drink")
        for item in _items(m.group("o")):
            if clause.negated:
                out.fact(clause, "drinks" if drink else "eats", item, confidence=0.8)
                out.fact(clause, "avoids", item, confidence=0.8, negated=False)
            elif clause.plain_negation:
                out.fact(clause, "avoids", item, confidence=0.75, negated=False)
            elif not drink:
                out.fact(clause, "eats", item, confidence=0.7)


def _diet(clause: Clause, out: Collector, vp: str) -> None:
    """A diet one follows, or one given up ("I quit keto": a negation)."""
    if clause.plain_negation:
        return
    m = _DIET.match(vp)
    left = _DIET_LEFT.match(vp) if not m and not clause.negated else None
    if (found := m or left) is not None:
        diet = (found.group("d") or found.groupdict().get("d2") or found.groupdict().get("d3") or "").lower()
        diet = diet.replace(" ", "-")
        diet = {"pescetarian": "pescatarian", "ketogenic": "keto"}.get(diet, diet)
        out.fact(clause, "diet", diet, confidence=0.85, negated=True if left else None)


def _plays_and_owns(clause: Clause, out: Collector, vp: str) -> None:
    if clause.plain_negation:
        return
    m = _PLAYS.match(vp)
    if m and _neither(m.group("o")) is None:
        for item in _items(m.group("o")):
            out.fact(clause, "plays", item, confidence=0.8)
    m = _OWNS.match(vp)
    if m:
        # "cleats on the 15th of last month": when it was got, not what
        raw, _ = before_date(m.group("o"), out.reference)
        obj = without_dangling(clean_object(_OWNED_END.split(raw)[0]))
        first = obj.split()[0] if obj else ""
        if obj and (is_product(obj) or is_org(first) or is_product(first)) and first[:1].isupper():
            out.entity(obj, "product", 0.75)
            out.fact(clause, "owns", obj, confidence=0.75)


def extract(clause: Clause, out: Collector) -> None:
    _favorites(clause, out)
    if clause.is_self:
        _hobbies(clause, out)
    vp = clause.vp
    if not vp:
        return
    _likes(clause, out, vp)
    _food(clause, out, vp)
    _plays_and_owns(clause, out, vp)
