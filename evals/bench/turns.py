"""Assemble requests for the benchmarks: varied turns, presets and budgets from templates and a seeded RNG."""

from __future__ import annotations

import random

import msgspec

from engine.retrieval.options import AssembleRequest
from evals.bench import corpus

ENTITY = "ent:user"

# prefixes of the bench corpus's lists, so the requests stay as they were
PEOPLE = corpus.FIRST[:20]
PLACES = corpus.CITIES[:10] + corpus.PLACES[:6]
THINGS = corpus.THINGS[:20]
TOPICS = corpus.TOPICS[:18]
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
