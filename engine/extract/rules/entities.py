"""Entities: small gazetteers (places, organizations, products, languages, nationalities,
professions) and the capitalized-name scanner that finds people, places and organizations the
fact patterns did not name. Ids are `ent:<slug>`."""

from __future__ import annotations

import re

from engine.extract.rules.text import entity_id, word_set
from engine.letters import NAME_CHAR, UPPER
from engine.models import Entity

_PLACES = """
Amsterdam Athens Atlanta Austin Bangkok Barcelona Beijing Berlin Bogota Boston Brisbane Brooklyn
Brussels Budapest Buenos Aires|Cairo Calgary Cape Town|Chicago Copenhagen Dallas Delhi Denver Dubai
Dublin Edinburgh Florence Frankfurt Geneva Glasgow Hamburg Helsinki Hong Kong|Houston Istanbul
Jakarta Kyoto Lagos Las Vegas|Lima Lisbon London Los Angeles|Lyon Madrid Manchester Manila
Marseille Melbourne Mexico City|Miami Milan Montreal Moscow Mumbai Munich Nairobi Naples Nashville
New Orleans|New York|New York City|Oakland Osaka Oslo Ottawa Oxford Paris Perth Philadelphia Phoenix
Portland Porto Prague Quebec Reykjavik Rome San Diego|San Francisco|San Jose|Santiago Sao Paulo|
Seattle Seoul Seville Shanghai Singapore Stockholm Sydney Taipei Tokyo Toronto Valencia Vancouver
Venice Vienna Warsaw Washington Zurich Cambridge Leeds Bristol Cologne Stuttgart Krakow Tallinn
Auckland Wellington Christchurch Adelaide Hobart Accra Casablanca Marrakech Tel Aviv|Doha Abu Dhabi|
Riyadh Karachi Lahore Dhaka Kolkata Chennai Bangalore Hyderabad Pune Hanoi Kuala Lumpur|Bergen
Gothenburg Malmo Aarhus Antwerp Rotterdam Utrecht Bilbao Malaga Nantes Bordeaux Toulouse Turin
Bologna Leipzig Dresden Dusseldorf Galway Cork Belfast Cardiff Liverpool Birmingham Nottingham
Sheffield Riga Vilnius Bucharest Belgrade Zagreb Ljubljana Bratislava Minneapolis Pittsburgh
Detroit Baltimore Sacramento Honolulu Anchorage Winnipeg Halifax Edmonton
Argentina Australia Austria Belgium Brazil Canada Chile China Colombia Croatia Denmark Egypt
England Finland France Germany Greece Iceland India Indonesia Ireland Israel Italy Japan Kenya
Korea Mexico Morocco Netherlands New Zealand|Nigeria Norway Peru Poland Portugal Scotland Spain
Sweden Switzerland Thailand Turkey Ukraine Vietnam Wales California Texas Florida Oregon Colorado
Ohio Michigan Georgia Virginia Massachusetts Bavaria Tuscany the UK|the US|the USA|UK USA
"""
_ORGS = """
Google Microsoft Apple Amazon Meta Facebook Netflix Tesla SpaceX IBM Intel Nvidia Oracle Salesforce
Adobe Spotify Uber Airbnb Stripe Shopify Twitter OpenAI Anthropic Siemens SAP Bosch BMW Volkswagen
Deloitte Accenture McKinsey Goldman Sachs|JPMorgan Walmart Target Starbucks Costco Ikea IKEA Nike
Acme Acme Corp|Initech Globex Samsung Sony Toyota Honda Ford Boeing Airbus Pfizer Unilever Nestle
Harvard MIT Stanford Oxford University|Yale Princeton Berkeley UCLA NYU Columbia ETH
"""
_PRODUCTS = """
iPhone|iPad|MacBook|MacBook Pro|MacBook Air|Pixel|Galaxy|Kindle|PlayStation|Xbox|Nintendo Switch|
Model 3|Model Y|Prius|Civic|Corolla|Jeep|Subaru|Vespa|ThinkPad|Peloton|Apple Watch|AirPods|
Tesla Model 3|Honda Civic|Toyota Prius|Toyota Corolla|Fitbit|Garmin|Roomba|Switch|Steam Deck
"""


_MULTI = {
    "Buenos Aires", "Cape Town", "Hong Kong", "Las Vegas", "Los Angeles", "Mexico City",
    "New Orleans", "New York", "New York City", "San Diego", "San Francisco", "San Jose",
    "Sao Paulo", "New Zealand", "the UK", "the US", "the USA", "Goldman Sachs", "Acme Corp",
    "Oxford University", "MacBook Pro", "MacBook Air", "Nintendo Switch", "Model 3", "Model Y",
    "Apple Watch", "Tesla Model 3", "Honda Civic", "Toyota Prius", "Toyota Corolla", "Steam Deck",
    "Tel Aviv", "Abu Dhabi", "Kuala Lumpur",
}  # fmt: skip


def _names(block: str) -> frozenset[str]:
    text = block.replace("\n", " ")
    found: set[str] = {m for m in _MULTI if m in text}
    for m in sorted(found, key=len, reverse=True):
        text = text.replace(m, " ")
    found.update(w for w in text.replace("|", " ").split() if w)
    return frozenset(found)


PLACES = _names(_PLACES)
ORGS = _names(_ORGS)
PRODUCTS = _names(_PRODUCTS)
_PLACES_LOWER = {p.lower() for p in PLACES}
_ORGS_LOWER = {o.lower() for o in ORGS}
_PRODUCTS_LOWER = {p.lower() for p in PRODUCTS}

LANGUAGES = word_set(
    "English Spanish French German Italian Portuguese Dutch Russian Japanese Chinese Mandarin "
    "Cantonese Korean Arabic Hindi Turkish Polish Swedish Norwegian Danish Greek Hebrew "
    "Vietnamese Thai Swahili Czech Finnish Ukrainian Catalan Latin"
)
NATIONALITIES = word_set(
    "American British English Scottish Irish Canadian Australian German French Italian Spanish "
    "Portuguese Dutch Belgian Swiss Austrian Swedish Norwegian Danish Finnish Polish Czech Greek "
    "Turkish Russian Ukrainian Japanese Chinese Korean Indian Brazilian Mexican Argentinian "
    "Colombian Chilean Peruvian Nigerian Kenyan Egyptian Israeli Vietnamese Thai Filipino Welsh "
    "Iranian Iraqi Syrian Lebanese Saudi Moroccan Ethiopian Ghanaian Pakistani Bangladeshi Nepali "
    "Indonesian Malaysian Singaporean Taiwanese Romanian Hungarian Bulgarian Serbian Croatian Slovak "
    "Lithuanian Latvian Estonian Icelandic Venezuelan Cuban Dominican Ecuadorian Jamaican Haitian"
)
#: what "I'm <word>" says of a person besides a name: a faith, an ethnicity, a region's people
BELIEFS_AND_ORIGINS = word_set(
    "Catholic Protestant Orthodox Jewish Muslim Buddhist Hindu Mormon Sikh Jain Atheist Agnostic "
    "Hispanic Latino Latina Latinx Asian African European Arab Persian Scandinavian Caribbean"
)
PROFESSION_HEADS = word_set(
    """engineer developer programmer designer teacher nurse doctor physician surgeon dentist lawyer
    attorney accountant analyst scientist researcher professor lecturer student manager director
    consultant architect writer author journalist editor photographer artist musician chef cook
    baker pharmacist therapist psychologist electrician plumber carpenter mechanic pilot driver
    firefighter officer paramedic veterinarian vet librarian translator cashier barista waiter
    waitress bartender salesperson recruiter founder ceo cto cfo coo intern freelancer entrepreneur
    administrator technician specialist coordinator assistant economist banker broker trader
    agent secretary clerk planner strategist marketer scientist biologist chemist physicist
    mathematician statistician actor actress dancer singer coach trainer tutor counselor
    midwife caregiver farmer gardener tailor hairdresser stylist lead owner"""
)

_STOP_CAPS = word_set(
    """I I'm My We Our The A An This That These Those It He She They His Her Their You Your Yes No
    Hi Hello Hey Thanks Thank Ok Okay So And But Or Also Actually Well Oh Btw Anyway Last Next Today
    Yesterday Tomorrow Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February
    March April May June July August September October November December Christmas Easter
    What Where When Who Why How Which If Maybe Just Mom Dad Mum Sir God Lol Sure Please Not
    One Two Three Some Every Each All Since After Before During Now Then There Here Home Life Work
    Things Turns Sadly Finally Officially Honestly Luckily Unfortunately Fortunately Lately Recently
    Good Great Big Quick Budget Change First Got Everything Nothing Everyone Someone Nobody"""
)


def is_place(name: str) -> bool:
    return name.lower() in _PLACES_LOWER


def is_org(name: str) -> bool:
    return name.lower() in _ORGS_LOWER


def is_product(name: str) -> bool:
    return name.lower() in _PRODUCTS_LOWER


_NAME_WORD = re.compile(f"{UPPER}{NAME_CHAR}+")


def is_given_name(name: str) -> bool:
    """A capitalized name that is not a stop word: what may name a pet ("my cat Pixel", "my dog Paris")."""
    words = name.split()
    if not words or len(words) > 3:
        return False
    if any(not _NAME_WORD.fullmatch(w) for w in words):
        return False
    return not (
        words[0] in _STOP_CAPS or name in LANGUAGES or name in NATIONALITIES or name in BELIEFS_AND_ORIGINS
    )


def is_person_name(name: str) -> bool:
    """A capitalized name that is not a stop word nor a known place, organization or product."""
    return is_given_name(name) and not (is_place(name) or is_org(name) or is_product(name))


def guess_type(name: str) -> str:
    if is_place(name):
        return "place"
    if is_org(name):
        return "organization"
    if is_product(name):
        return "product"
    return "person" if is_person_name(name) else "other"


def make_entity(name: str, type_: str, confidence: float = 0.8, **attributes: object) -> Entity:
    return Entity(
        entity_id=entity_id(name), type=type_, name=name, confidence=confidence, attributes=dict(attributes)
    )


#: longer than any word of _PERSON_CONTEXT, so the last word in the window is whole or no context word
_WORD_WINDOW = 40
_CAP_SEQ = re.compile(rf"\b({UPPER}{NAME_CHAR}+(?:\s+(?:{UPPER}{NAME_CHAR}+|\d+))*)")


def scan_named(sentence: str) -> list[Entity]:
    """Known places, organizations and products named anywhere in the sentence (not sentence-initial
    words unless the gazetteers know them)."""
    found: list[Entity] = []
    for m in _CAP_SEQ.finditer(sentence):
        name = m.group(1).strip()
        candidates = [name]
        parts = name.split()
        if len(parts) > 1:
            candidates += [" ".join(parts[:2]), parts[0]]
        for cand in candidates:
            kind = guess_type(cand)
            if kind in ("place", "organization", "product"):
                found.append(make_entity(cand, kind, 0.7))
                break
        else:
            # the word before the name: a short window, not the whole prefix once per name (quadratic)
            before = sentence[max(0, m.start() - _WORD_WINDOW) : m.start()].split()
            if before and before[-1].lower().strip(",") in _PERSON_CONTEXT and is_person_name(name):
                found.append(make_entity(name, "person", 0.5))
    return found


_PERSON_CONTEXT = word_set(
    "with and to from named called met meet ask asked tell told call called text texted visit visited "
    "friend friends sister brother wife husband son daughter mom dad boss colleague coworker partner "
    "girlfriend boyfriend cousin uncle aunt grandma grandpa neighbor dr. mr. mrs. ms."
)
