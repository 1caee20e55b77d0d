"""Benchmark corpora: realistic short memories for one entity, from templates and a seeded RNG.

`memories(n, seed)` gives `n` distinct texts (a tenth of them facts with subject/predicate/object,
the rest events and notes), timestamps spread over two years before `NOW`. The first `k` texts of a
corpus of size `n >= k` are the texts of the corpus of size `k` (the generator is a stream), so one
vector cache filled for the largest size serves every smaller one.

`ingest_drafts(n, seed)` gives distinct MemoryCreate drafts for the ingest benchmark, and
`ingest_turns(n, seed)` first-person turns the rule extractor turns into facts ("I moved to Lisbon").
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

from engine.memory_service import MemoryCreate
from engine.models import Memory

NOW = datetime(2026, 1, 1, tzinfo=UTC)
ORG = "org_bench"
ENTITY = "ent:user"
SPAN_MINUTES = 2 * 365 * 24 * 60

FIRST = [
    "Alice",
    "Bob",
    "Carla",
    "Dmitri",
    "Elena",
    "Farid",
    "Grace",
    "Hiro",
    "Ines",
    "Jonas",
    "Kemi",
    "Luca",
    "Maya",
    "Nora",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sam",
    "Tara",
    "Umar",
    "Vera",
    "Wen",
    "Ximena",
    "Yusuf",
    "Zoe",
]
LAST = [
    "Okafor",
    "Schmidt",
    "Tanaka",
    "Silva",
    "Novak",
    "Haddad",
    "Larsen",
    "Moreau",
    "Kowalski",
    "Reyes",
    "Chen",
    "Patel",
    "Dubois",
    "Rossi",
    "Fischer",
    "Nakamura",
]
CITIES = [
    "Paris",
    "Berlin",
    "Lisbon",
    "Tokyo",
    "Nairobi",
    "Toronto",
    "Lyon",
    "Oslo",
    "Austin",
    "Seoul",
    "Madrid",
    "Dublin",
    "Prague",
    "Lagos",
    "Melbourne",
    "Vancouver",
    "Porto",
    "Kyoto",
    "Denver",
    "Milan",
]
PLACES = [
    "the office",
    "the gym",
    "the park",
    "the library",
    "the airport",
    "home",
    "the cafe on Main Street",
    "the farmers market",
    "the dentist",
    "the climbing hall",
    "the train station",
    "the bakery",
]
COMPANIES = [
    "Acme",
    "Globex",
    "Initech",
    "Umbrella",
    "Stark Industries",
    "Wayne Enterprises",
    "Hooli",
    "Vandelay Industries",
    "Soylent",
    "Cyberdyne",
    "Tyrell",
    "Wonka",
]
JOBS = [
    "engineer",
    "designer",
    "nurse",
    "teacher",
    "accountant",
    "product manager",
    "chef",
    "lawyer",
    "data scientist",
    "architect",
]
THINGS = [
    "green tea",
    "jazz",
    "hiking",
    "sourdough bread",
    "chess",
    "sci-fi novels",
    "cycling",
    "Italian food",
    "yoga",
    "board games",
    "photography",
    "gardening",
    "running",
    "sushi",
    "podcasts",
    "woodworking",
    "salsa dancing",
    "climbing",
    "pottery",
    "birdwatching",
    "opera",
    "ramen",
    "crosswords",
    "kayaking",
]
TOPICS = [
    "the quarterly budget",
    "a new apartment",
    "the product launch",
    "a job interview",
    "the wedding plans",
    "a doctor's appointment",
    "the car repair",
    "a birthday party",
    "the tax return",
    "a marathon",
    "the team offsite",
    "a visa application",
    "the garden",
    "a flight delay",
    "the kids' school",
    "a conference talk",
    "the hiring plan",
    "a vacation",
    "the lease renewal",
    "a piano recital",
    "the insurance claim",
    "a book club",
]
WHEN = [
    "Yesterday",
    "Last week",
    "On Monday",
    "This morning",
    "In March",
    "Two days ago",
    "On Friday night",
    "Last summer",
    "Over the weekend",
    "Earlier today",
]
VERBS = [
    "met",
    "called",
    "had lunch with",
    "argued with",
    "went hiking with",
    "emailed",
    "visited",
    "texted",
    "worked late with",
    "celebrated with",
    "had coffee with",
    "video-called",
]
FEELINGS = ["excited", "worried", "relieved", "frustrated", "curious", "tired", "optimistic"]
ALLERGENS = ["peanuts", "cats", "pollen", "shellfish", "penicillin", "dust mites", "gluten"]
PETS = ["dog", "cat", "parrot", "rabbit", "tortoise"]
PET_NAMES = ["Biscuit", "Luna", "Pepper", "Milo", "Kiwi", "Nacho", "Olive", "Rex"]
MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


def _person(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


def _fact(rng: random.Random) -> tuple[str, str, str, str]:
    """(text, subject, predicate, object) about a named person or the user."""
    name = _person(rng)
    who, subject = (name, "ent:" + name.lower().replace(" ", "-"))
    if rng.random() < 0.3:
        who, subject = "The user", ENTITY
    kind = rng.randrange(8)
    if kind == 0:
        city = rng.choice(CITIES)
        return f"{who} lives in {city}", subject, "lives_in", city
    if kind == 1:
        company, job = rng.choice(COMPANIES), rng.choice(JOBS)
        return f"{who} works at {company} as a {job}", subject, "works_at", company
    if kind == 2:
        thing = rng.choice(THINGS)
        return f"{who} likes {thing}", subject, "likes", thing
    if kind == 3:
        date = f"{rng.choice(MONTHS)} {rng.randint(1, 28)}"
        return f"{who}'s birthday is on {date}", subject, "birthday", date
    if kind == 4:
        allergen = rng.choice(ALLERGENS)
        return f"{who} is allergic to {allergen}", subject, "allergic_to", allergen
    if kind == 5:
        amount = rng.randrange(100, 5000, 50)
        return f"{who} has a budget of ${amount} for {rng.choice(TOPICS)}", subject, "budget", str(amount)
    if kind == 6:
        pet, pet_name = rng.choice(PETS), rng.choice(PET_NAMES)
        return f"{who} has a {pet} named {pet_name}", subject, "has_pet", pet_name
    city = rng.choice(CITIES)
    return (
        f"{who} moved to {city} in {rng.choice(MONTHS)} {rng.randint(2015, 2025)}",
        subject,
        "moved_to",
        city,
    )


def _event(rng: random.Random) -> str:
    form = rng.randrange(3)
    if form == 0:
        return (
            f"{rng.choice(WHEN)} the user {rng.choice(VERBS)} {_person(rng)} at {rng.choice(PLACES)} "
            f"about {rng.choice(TOPICS)}"
        )
    if form == 1:
        return (
            f"{rng.choice(WHEN)} {_person(rng)} told the user they felt {rng.choice(FEELINGS)} about "
            f"{rng.choice(TOPICS)}"
        )
    return (
        f"{rng.choice(WHEN)} the user flew to {rng.choice(CITIES)} for {rng.choice(TOPICS)} and stayed "
        f"{rng.randint(2, 14)} days"
    )


def _note(rng: random.Random) -> str:
    form = rng.randrange(3)
    if form == 0:
        return (
            f"{_person(rng)} recommended {rng.choice(THINGS)} while talking about {rng.choice(TOPICS)}; "
            f"follow up at {rng.choice(PLACES)}"
        )
    if form == 1:
        return (
            f"Reminder: ask {_person(rng)} about {rng.choice(TOPICS)} before {rng.choice(MONTHS)} "
            f"{rng.randint(1, 28)}"
        )
    return (
        f"Idea for {rng.choice(TOPICS)}: combine {rng.choice(THINGS)} with {rng.choice(THINGS)}, "
        f"budget about ${rng.randrange(20, 2000, 10)}"
    )


def _stream(seed: int) -> Iterator[tuple[str, str, tuple[str, str, str] | None]]:
    """(type, text, (subject, predicate, object) | None), distinct texts, every tenth a fact."""
    rng = random.Random(seed)
    seen: set[str] = set()
    i = 0
    while True:
        spo: tuple[str, str, str] | None = None
        kind = "fact" if i % 10 == 0 else ("event" if rng.random() < 0.5 else "note")
        for attempt in range(50):
            if kind == "fact":
                text, s, p, o = _fact(rng)
                spo = (s, p, o)
            else:
                text = _event(rng) if kind == "event" else _note(rng)
            if attempt == 49:
                text = f"{text} (#{i})"
            if text not in seen:
                break
        seen.add(text)
        yield kind, text, spo
        i += 1


def texts(n: int, seed: int = 0) -> list[str]:
    out: list[str] = []
    for _kind, text, _ in _stream(seed):
        if len(out) == n:
            break
        out.append(text)
    return out


def memories(n: int, seed: int = 0) -> list[Memory]:
    """`n` memories of ORG/ENTITY, ids `mem_bench_<i>`, distinct texts (see the module docstring)."""
    ts_rng = random.Random(seed + 1_000_003)
    out: list[Memory] = []
    stream = _stream(seed)
    for i in range(n):
        kind, text, spo = next(stream)
        ts = NOW - timedelta(minutes=ts_rng.randrange(0, SPAN_MINUTES))
        out.append(
            Memory(
                memory_id=f"mem_bench_{i:07d}",
                org_id=ORG,
                entity_id=ENTITY,
                type=kind,  # type: ignore[arg-type]
                text=text,
                timestamp=ts,
                created_at=ts,
                updated_at=ts,
                confidence=round(ts_rng.uniform(0.5, 1.0), 2) if spo is not None else None,
                subject=spo[0] if spo else None,
                predicate=spo[1] if spo else None,
                object=spo[2] if spo else None,
                object_type="string" if spo else None,
                valid_from=ts if spo else None,
            )
        )
    return out


def ingest_drafts(n: int, seed: int) -> list[MemoryCreate]:
    """`n` distinct drafts (a tenth facts) for MemoryService.create / POST /v0/memories."""
    out: list[MemoryCreate] = []
    stream = _stream(seed)
    for _ in range(n):
        kind, text, spo = next(stream)
        out.append(
            MemoryCreate(
                entity_id=ENTITY,
                type=kind,  # type: ignore[arg-type]
                text=text,
                subject=spo[0] if spo else None,
                predicate=spo[1] if spo else None,
                object=spo[2] if spo else None,
                confidence=0.8 if spo else None,
            )
        )
    return out


TURN_TEMPLATES = [
    "I moved to {city} last month.",
    "I live in {city} now.",
    "My budget for {topic} is now ${amount}.",
    "I work at {company} as a {job}.",
    "I really like {thing}.",
    "I don't like {thing} anymore.",
    "I'm allergic to {allergen}.",
    "My birthday is on {month} {day}.",
    "I have a {pet} named {pet_name}.",
    "I no longer work at {company}.",
    "Can you remind me what {first} said about {topic}?",
    "We're planning {topic}; what do you know about {first}?",
]


def ingest_turns(n: int, seed: int = 7) -> list[str]:
    """First-person turns (statements the rule extractor understands, a few questions), varied."""
    rng = random.Random(seed)
    return [
        rng.choice(TURN_TEMPLATES).format(
            city=rng.choice(CITIES),
            topic=rng.choice(TOPICS),
            amount=rng.randrange(100, 5000, 50),
            company=rng.choice(COMPANIES),
            job=rng.choice(JOBS),
            thing=rng.choice(THINGS),
            allergen=rng.choice(ALLERGENS),
            month=rng.choice(MONTHS),
            day=rng.randint(1, 28),
            pet=rng.choice(PETS),
            pet_name=rng.choice(PET_NAMES),
            first=rng.choice(FIRST),
        )
        for _ in range(n)
    ]
