"""The synthetic supersession generator: seeded chats in which facts about the user change.

Each entity is one user chatting with an assistant over many dated sessions. The user states
single-valued facts that change over time (where they live, where they work, their budget,
age, partner) and multi-valued ones that accumulate (pets, likes, allergies) and are sometimes
ended by an explicit negation, phrased in varied first-person ways, between distractor chatter.
Probe questions are asked at points in that timeline; the gold answer is what was current at
that time (`Question.current_values`) and what had been true before but no longer is
(`Question.stale_values`). Every turn that states a fact carries it in `Turn.facts`, so the gold
answers can be recomputed from the turns (`values_at`).

    generate(SyntheticConfig(seed=7)) -> Dataset          # pure, deterministic for a seed
    write_synthetic(path, config) -> Path                  # the common JSON format
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import msgspec

from evals import synthetic_phrases as P
from evals.model import Conversation, Dataset, GoldFact, Question, Session, Turn, encode_dataset

SINGLE_VALUED: tuple[str, ...] = ("lives_in", "works_at", "budget", "age", "partner")
MULTI_VALUED: tuple[str, ...] = ("has_pet", "likes", "allergic_to")
ASSISTANT = "assistant"


class SyntheticConfig(msgspec.Struct, frozen=True, kw_only=True):
    seed: int = 0
    entities: int = 20
    start: datetime = datetime(2024, 1, 1, tzinfo=UTC)
    days: int = 540
    max_values: int = 4  # values per single-valued predicate (1 = never changes)
    chatter_per_fact: float = 1.5  # distractor turns per fact-stating turn
    reply_probability: float = 0.5  # chance the assistant answers a user turn
    probes_per_entity: int = 8
    end_probe_share: float = 0.5  # share of probes asked after the last session


@dataclass
class _Line:
    """A user turn before it is dated: when (in days from the start) and what."""

    at: float
    text: str
    facts: tuple[GoldFact, ...] = ()
    reply: str | None = None


def _money(rng: random.Random, value: int) -> str:
    return rng.choice((f"${value:,}", f"${value}", f"{value} dollars", f"{value:,} USD"))


def _single_values(rng: random.Random, predicate: str, n: int) -> list[str]:
    if predicate == "lives_in":
        return rng.sample(P.CITIES, n)
    if predicate == "works_at":
        return rng.sample(P.COMPANIES, n)
    if predicate == "partner":
        return rng.sample(P.PARTNERS, n)
    if predicate == "budget":
        return [str(v) for v in rng.sample(range(400, 3050, 50), n)]
    first = rng.randint(22, 60)  # age: one more each time
    return [str(first + i) for i in range(n)]


def _single_lines(rng: random.Random, predicate: str, config: SyntheticConfig) -> list[_Line]:
    n = rng.randint(1, 2 if predicate == "age" else config.max_values)
    values = _single_values(rng, predicate, n)
    days = sorted(rng.sample(range(config.days), n))
    lines: list[_Line] = []
    for i, (value, day) in enumerate(zip(values, days, strict=True)):
        template = rng.choice(P.FIRST[predicate] if i == 0 else P.CHANGE[predicate])
        text = template.format(
            v=value,
            old=values[i - 1] if i else "",
            role=rng.choice(P.ROLES),
            money=_money(rng, int(value)) if predicate == "budget" else "",
        )
        lines.append(
            _Line(at=day + rng.random(), text=text, facts=(GoldFact(predicate=predicate, value=value),))
        )
    return lines


def _multi_lines(rng: random.Random, predicate: str, config: SyntheticConfig) -> list[_Line]:
    pool = {"has_pet": P.PETS, "likes": P.LIKES, "allergic_to": P.ALLERGIES}[predicate]
    n = rng.randint(0 if predicate == "allergic_to" else 1, 3)
    lines: list[_Line] = []
    for value in rng.sample(pool, n):
        added = rng.uniform(0, config.days - 1)
        text = rng.choice(P.ADD[predicate]).format(v=value)
        lines.append(
            _Line(at=added, text=text, facts=(GoldFact(predicate=predicate, value=value, action="add"),))
        )
        if rng.random() < 0.3 and added < config.days - 2:
            removed = rng.uniform(added + 1, config.days - 1)
            text = rng.choice(P.REMOVE[predicate]).format(v=value)
            fact = GoldFact(predicate=predicate, value=value, action="remove")
            lines.append(_Line(at=removed, text=text, facts=(fact,)))
    return lines


def values_at(
    turns: tuple[Turn, ...] | list[Turn], predicate: str, at: datetime
) -> tuple[list[str], list[str]]:
    """(current, stale) values of a predicate from the turns dated strictly before `at`: for a
    single-valued predicate the latest value and the earlier ones; for a multi-valued one the
    values added and not removed, and the removed ones."""
    current: list[str] = []
    stale: list[str] = []
    for turn in sorted(turns, key=lambda t: t.timestamp):
        if turn.timestamp >= at:
            break
        for fact in turn.facts:
            if fact.predicate != predicate:
                continue
            if fact.action == "set":
                stale.extend(v for v in current if v != fact.value and v not in stale)
                current = [fact.value]
            elif fact.action == "add" and fact.value not in current:
                current.append(fact.value)
                if fact.value in stale:
                    stale.remove(fact.value)
            elif fact.action == "remove" and fact.value in current:
                current.remove(fact.value)
                stale.append(fact.value)
    return current, [v for v in stale if v not in current]


def _date_lines(
    rng: random.Random, conv_id: str, name: str, lines: list[_Line], start: datetime
) -> tuple[list[Session], list[Turn]]:
    """Sessions are the days that hold a line, at a random hour; turns are dated session date +
    position in seconds, in the order of the lines' times."""
    by_day: dict[int, list[_Line]] = {}
    for line in sorted(lines, key=lambda x: x.at):
        by_day.setdefault(int(line.at), []).append(line)
    sessions: list[Session] = []
    turns: list[Turn] = []
    for n, day in enumerate(sorted(by_day), start=1):
        date = start + timedelta(days=day, hours=rng.randint(8, 21), minutes=rng.randint(0, 59))
        session = Session(session_id=f"S{n}", date=date)
        sessions.append(session)
        index = 0
        for line in by_day[day]:
            speakers = [(name, line.text, line.facts)]
            if line.reply is not None:
                speakers.append((ASSISTANT, line.reply, ()))
            for speaker, text, facts in speakers:
                turns.append(
                    Turn(
                        turn_id=f"{conv_id}:S{n}:{index}",
                        speaker=speaker,
                        text=text,
                        timestamp=date + timedelta(seconds=index),
                        session=session.session_id,
                        index=index,
                        facts=facts,
                    )
                )
                index += 1
    return sessions, turns


def _probes(
    rng: random.Random, conv_id: str, name: str, turns: list[Turn], config: SyntheticConfig
) -> list[Question]:
    first_said: dict[str, datetime] = {}
    statements: dict[str, int] = {}
    for turn in turns:
        for fact in turn.facts:
            first_said.setdefault(fact.predicate, turn.timestamp)
            statements[fact.predicate] = statements.get(fact.predicate, 0) + 1
    predicates = sorted(first_said)
    # predicates that changed more often are asked about more often: they test supersession
    weights = [statements[p] ** 2 for p in predicates]
    end = turns[-1].timestamp + timedelta(hours=1)
    questions: list[Question] = []
    asked: set[tuple[str, datetime]] = set()
    for _ in range(4 * config.probes_per_entity if predicates else 0):
        if len(questions) == config.probes_per_entity:
            break
        predicate = rng.choices(predicates, weights)[0]
        if rng.random() < config.end_probe_share:
            asked_at = end
        else:  # between two whole seconds, so never at the same instant as a turn
            span = (end - first_said[predicate]).total_seconds()
            asked_at = first_said[predicate] + timedelta(seconds=int(rng.uniform(1, span)) + 0.5)
        if (predicate, asked_at) in asked:
            continue
        asked.add((predicate, asked_at))
        i = len(questions)
        current, stale = values_at(turns, predicate, asked_at)
        evidence = tuple(
            t.turn_id
            for t in turns
            if t.timestamp < asked_at
            and any(f.predicate == predicate and f.value in current and f.action != "remove" for f in t.facts)
        )
        questions.append(
            Question(
                question_id=f"{conv_id}:p{i}",
                conversation_id=conv_id,
                text=rng.choice(P.QUESTIONS[predicate]).format(name=name),
                answer=", ".join(current) if current else None,
                evidence=evidence,
                asked_at=asked_at,
                category=predicate,
                answerable=bool(current),
                subject=name,
                predicate=predicate,
                current_values=tuple(current),
                stale_values=tuple(stale),
            )
        )
    return questions


def _entity(rng: random.Random, index: int, config: SyntheticConfig) -> tuple[Conversation, list[Question]]:
    conv_id = f"syn-{index:03d}"
    name = P.FIRST_NAMES[index % len(P.FIRST_NAMES)]
    if index >= len(P.FIRST_NAMES):
        name = f"{name} {index // len(P.FIRST_NAMES) + 1}"
    lines: list[_Line] = []
    for predicate in SINGLE_VALUED:
        lines.extend(_single_lines(rng, predicate, config))
    for predicate in MULTI_VALUED:
        lines.extend(_multi_lines(rng, predicate, config))
    n_chatter = round(len(lines) * config.chatter_per_fact)
    for _ in range(n_chatter):
        lines.append(_Line(at=rng.uniform(0, config.days), text=rng.choice(P.CHATTER)))
    for line in lines:
        if rng.random() < config.reply_probability:
            line.reply = rng.choice(P.CHATTER_REPLIES if not line.facts else P.REPLIES)
    start = config.start + timedelta(days=rng.randint(0, 30))
    sessions, turns = _date_lines(rng, conv_id, name, lines, start)
    conv = Conversation(
        conversation_id=conv_id, speakers=(name, ASSISTANT), sessions=tuple(sessions), turns=tuple(turns)
    )
    return conv, _probes(rng, conv_id, name, turns, config)


def generate(config: SyntheticConfig | None = None) -> Dataset:
    """A synthetic dataset; the same config (seed included) always gives the same dataset."""
    config = config or SyntheticConfig()
    rng = random.Random(config.seed)
    conversations: list[Conversation] = []
    questions: list[Question] = []
    for i in range(config.entities):
        conv, probes = _entity(rng, i, config)
        conversations.append(conv)
        questions.extend(probes)
    return Dataset(
        name=f"synthetic-s{config.seed}",
        conversations=tuple(conversations),
        questions=tuple(questions),
        source=f"evals.synthetic.generate({msgspec.json.encode(config).decode()})",
        license="Apache-2.0 (generated by Loci)",
    )


def write_synthetic(path: str | Path, config: SyntheticConfig | None = None) -> Path:
    """Generate and write the common JSON format (read back by `evals.loaders.load_json`)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(encode_dataset(generate(config)))
    return out
