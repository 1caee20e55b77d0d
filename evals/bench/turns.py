"""Assemble requests for the benchmarks: varied turns, presets and budgets from templates and a seeded RNG."""

from __future__ import annotations

import random

import msgspec

from engine.retrieval.options import AssembleRequest

ENTITY = "ent:user"

PEOPLE = [
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
]
PLACES = [
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
    "the office",
    "the gym",
    "the park",
    "the library",
    "the airport",
    "home",
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
]
TURNS = [
    "What does the user think about {thing}?",
    "Remind me what happened with {person} in {place}.",
    "Any plans about {topic}?",
    "Did I ever talk to {person} about {topic}?",
    "Where does {person} live these days?",
    "What should I bring to {place} tomorrow?",
    "Summarize what we know about {topic} and {thing}.",
    "When did I last see {person}?",
    "I'm heading to {place} with {person}; anything I should remember?",
    "What do I like besides {thing}?",
]


def assemble_requests(calls: int, seed: int = 1) -> list[AssembleRequest]:
    rng = random.Random(seed)
    out: list[AssembleRequest] = []
    for i in range(calls):
        turn = rng.choice(TURNS).format(
            thing=rng.choice(THINGS),
            person=rng.choice(PEOPLE),
            place=rng.choice(PLACES),
            topic=rng.choice(TOPICS),
        )
        preset = rng.choice(["balanced", "balanced", "balanced", "fast", "factual", "recent", "graphy"])
        body = {
            "entity_id": ENTITY,
            "turn": f"{turn} ({i})",
            "budget": {"max_context_tokens": rng.choice([512, 1200, 1200, 2000])},
            "retrieval": {"preset": preset},
        }
        out.append(msgspec.convert(body, AssembleRequest))
    return out
