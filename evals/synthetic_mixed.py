"""Synthetic mixed-type scopes: facts, notes, documents and events about one person together, and
questions worded unlike the memory that answers them.

Each entity holds six facts ("Ana lives in Lisbon"), two notes, one document and 120 short events of
chatter spoken minutes apart in one stretch of conversation ("Ana: talked about topic number 12 and
the weather in week 12", "Ana: the weather in Oslo looked lovely on the news this week": chatter that
names the things the questions ask about), plus two events that say something. Every question names its answer's
memory as evidence: a fact asked in other words ("Which city does she call home these days?"), a note,
the document, or a telling event. It tests what LoCoMo and LongMemEval cannot: that a conversation's
many turns, and the boosts they give each other, do not bury a better match of another type.

    generate_mixed(MixedConfig(seed=3)) -> Dataset     # pure, deterministic for a seed
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import msgspec

from evals.model import Conversation, Dataset, Question, Session, Turn

NAMES = ("Ana", "Bruno", "Chloe", "Dmitri", "Elena", "Farid", "Greta", "Hiro", "Ines", "Jonas", "Kira",
         "Luca", "Maya", "Nils", "Olga", "Pavel", "Quinn", "Rosa", "Sami", "Tara")  # fmt: skip
CITIES = ("Lisbon", "Oslo", "Porto", "Vienna", "Kyoto", "Denver", "Quito", "Dublin", "Tallinn", "Perth")
EMPLOYERS = ("Acme", "Globex", "Initech", "Umbrella", "Hooli", "Vandelay", "Stark Labs", "Wonka")
INSTRUMENTS = ("cello", "banjo", "harp", "trumpet", "oboe", "ukulele")
FOODS = ("peanuts", "shellfish", "gluten", "sesame", "dairy")
PETS = (("dog", "Rex"), ("cat", "Miso"), ("parrot", "Kiwi"), ("rabbit", "Clover"), ("tortoise", "Sheldon"))


class MixedConfig(msgspec.Struct, frozen=True, kw_only=True):
    seed: int = 0
    entities: int = 20
    chatter: int = 120
    start: datetime = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


def _scope(rng: random.Random, name: str) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    """(memories as (kind, text), questions as (category, question, answer text)) for one person."""
    city, employer = rng.choice(CITIES), rng.choice(EMPLOYERS)
    instrument, food = rng.choice(INSTRUMENTS), rng.choice(FOODS)
    pet, pet_name = rng.choice(PETS)
    age = rng.randint(24, 61)
    facts = [
        f"{name} lives in {city}",
        f"{name} works at {employer}",
        f"{name} is {age} years old",
        f"{name} is allergic to {food}",
        f"{name} has a {pet} named {pet_name}",
        f"{name} speaks three languages",
    ]
    notes = [
        f"{name} prefers window seats and always flies early in the morning",
        f"{name} wants the quarterly report sent as a printed copy, never by email",
    ]
    document = (
        f"Onboarding checklist for {name}: laptop issued on the first day, badge photo taken at reception, "
        f"mentor meeting every Thursday, security training due within two weeks."
    )
    said = [f"{name}: I finally started learning the {instrument} with a teacher downtown.",
            f"{name}: My sister is getting married in June and I am giving the speech."]  # fmt: skip
    memories = [("fact", f) for f in facts] + [("note", n) for n in notes] + [("document", document)]
    questions = [
        ("fact", "Which city does she call home these days?", facts[0]),
        ("fact", "Who is the employer paying the salary at the moment?", facts[1]),
        ("fact", "Which foods must be kept away from the plate?", facts[3]),
        ("fact", "What is the name of the animal at home?", facts[4]),
        ("note", "How should travel be booked, seat-wise?", notes[0]),
        ("note", "In what form should the quarterly numbers be delivered?", notes[1]),
        ("document", "What happens during the first weeks at the new job?", document),
        ("event", "Which musical instrument is being learned?", said[0]),
        ("event", "Whose wedding is coming up in the family?", said[1]),
    ]
    return memories + [("event", s) for s in said], questions


CHATTER = (
    "talked about topic number {i} and the weather in week {i}",
    "the weather in {city} looked lovely on the news this week",
    "a friend from {employer} sent a funny video today",
    "watched a documentary about {food} farming in week {i}",
    "heard someone play the {instrument} on the radio this morning",
    "the neighbours' {pet} was loud again last night",
    "read an article about booking cheap trains and flights",
    "the printer at the library ran out of paper again",
    "spent the evening sorting old photos from {city}",
)


def _chatter(rng: random.Random, i: int) -> str:
    """A turn that says nothing about the person, often naming things their questions are about."""
    pet = rng.choice(PETS)[0]
    return rng.choice(CHATTER).format(
        i=i, city=rng.choice(CITIES), employer=rng.choice(EMPLOYERS), food=rng.choice(FOODS),
        instrument=rng.choice(INSTRUMENTS), pet=pet,
    )  # fmt: skip


def generate_mixed(config: MixedConfig | None = None) -> Dataset:
    c = config or MixedConfig()
    rng = random.Random(c.seed)
    conversations: list[Conversation] = []
    questions: list[Question] = []
    for e, name in enumerate(NAMES[: c.entities]):
        cid = f"mixed-{e:02d}-{name.lower()}"
        session = Session(session_id=f"{cid}-s1", date=c.start + timedelta(days=e))
        memories, asked = _scope(rng, name)
        chatter = [
            ("event", f"{name}: talked about topic number {i} and the weather in week {i}")
            for i in range(c.chatter)
        ]
        stream = memories[:-2] + chatter[: c.chatter // 2] + memories[-2:] + chatter[c.chatter // 2 :]
        turns = [
            Turn(
                turn_id=f"{cid}:{i}",
                speaker=name if kind == "event" else "",
                text=text.split(": ", 1)[1] if kind == "event" else text,
                timestamp=session.date + timedelta(minutes=i),
                session=session.session_id,
                index=i,
                kind=kind,
            )
            for i, (kind, text) in enumerate(stream)
        ]
        by_text = {t.memory_text(): t.turn_id for t in turns}
        conversations.append(
            Conversation(conversation_id=cid, speakers=(name,), sessions=(session,), turns=tuple(turns))
        )
        for j, (category, text, answer) in enumerate(asked):
            questions.append(
                Question(
                    question_id=f"{cid}:q{j}",
                    conversation_id=cid,
                    text=text,
                    answer=answer,
                    evidence=(by_text[answer],),
                    asked_at=turns[-1].timestamp + timedelta(days=1),
                    category=category,
                )
            )
    return Dataset(
        name="synthetic-mixed",
        conversations=tuple(conversations),
        questions=tuple(questions),
        source="generated by evals/synthetic_mixed.py",
        license="Apache-2.0",
    )
