"""engine.write.turns: plan (no store) then commit (one transaction), on the in-memory store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import msgspec
import pytest

from engine.extract import create_extractor
from engine.extract.rules import RuleExtractor
from engine.models import SubjectId
from engine.storage.base import EventQuery, ListQuery
from engine.storage.in_memory import InMemoryStore
from engine.write.turns import commit_turn, embed_for_write, plan_turn, subject_for

T0 = datetime(2025, 1, 1, 9, 0, tzinfo=UTC)
RULES = create_extractor("rules")


@pytest.mark.parametrize(
    ("entity", "subject"),
    [
        ("ent:user", "ent:user"),
        ("alice", "ent:alice"),
        ("User 42", "ent:user-42"),
        (None, "ent:user"),
        ("ent:has space", "ent:ent-has-space"),
    ],
)
def test_subject_for(entity: str | None, subject: str) -> None:
    assert subject_for(entity) == subject


def test_plan_touches_no_store_and_lists_texts() -> None:
    plan = plan_turn(RULES, "I live in Paris", org_id="o", entity_id="ent:user", timestamp=T0, now=T0)
    assert plan.turn is not None and plan.turn.type == "event" and plan.turn.timestamp == T0
    assert plan.texts() == ["I live in Paris", "User lives in Paris"]
    assert plan.writes_anything
    for blank in ("   ", "\x00", "\u200b", " \ufeff\x00\n"):  # nothing visible: nothing stored
        empty = plan_turn(RULES, blank, org_id="o", entity_id="ent:user", timestamp=T0, now=T0)
        assert empty.turn is None and empty.extraction.facts == [] and not empty.writes_anything, repr(blank)
    none = plan_turn(
        RULES,
        "I live in Paris",
        org_id="o",
        entity_id="e",
        timestamp=T0,
        now=T0,
        store_turn="none",
        extract=False,
    )
    assert not none.writes_anything and none.texts() == []


def test_commit_supersedes_and_links_the_turn() -> None:
    store = InMemoryStore()
    first = commit_turn(
        store,
        plan_turn(RULES, "I live in Paris", org_id="o", entity_id="ent:user", timestamp=T0, now=T0),
        now=T0,
    )
    t1 = T0 + timedelta(days=30)
    second = commit_turn(
        store,
        plan_turn(RULES, "I moved to Berlin", org_id="o", entity_id="ent:user", timestamp=t1, now=t1),
        now=t1,
    )
    turn_id = second.extracted.upserts[0].memory_id
    (fact,) = second.extracted.facts
    assert fact.provenance["source_turn"] == turn_id and fact.valid_from == t1
    paris_id = first.extracted.upserts[1].memory_id
    assert second.extracted.upserts[1].action == "SUPERSEDED" and second.extracted.upserts[1].supersedes == [
        paris_id
    ]
    paris = store.get_memory("o", paris_id or "")
    assert paris is not None and paris.status == "superseded" and paris.valid_to == t1
    assert store.count_memories("o") == 4  # two turns, two facts
    kinds = [e.type for _, e in store.list_events("o", EventQuery(limit=100))]
    assert kinds.count("memory.superseded") == 1


def test_a_named_speakers_facts_read_with_their_name() -> None:
    """A `<Name>: ` turn's facts name the speaker in their text; the request's own entity reads "User"."""

    def texts(entity: str, turn: str) -> list[tuple[str, str]]:
        plan = plan_turn(RULES, turn, org_id="o", entity_id=entity, timestamp=T0, now=T0)
        return [(f.subject, f.text) for f in plan.extraction.facts]

    assert texts("ent:chat", "Melanie: I am 40 years old.") == [("ent:melanie", "Melanie is 40 years old")]
    assert texts("ent:chat", "Caroline: My sister Anna lives in Rome.") == [
        ("ent:caroline", "Caroline has a sibling named Anna"),
        ("ent:anna", "Anna lives in Rome"),
    ]
    assert texts("ent:chat", "I am 25 years old.") == [("ent:chat", "User is 25 years old")]
    assert texts("ent:chat", "user: I am 25 years old.") == [("ent:chat", "User is 25 years old")]
    assert texts("ent:melanie", "Melanie: I am 40 years old.") == [("ent:melanie", "User is 40 years old")]
    about_subject = plan_turn(
        RULES, "Melanie: I am 40.", org_id="o", entity_id="ent:chat", timestamp=T0, now=T0, subject="ent:mel"
    )
    assert [f.text for f in about_subject.extraction.facts] == ["User is 40 years old"]


@pytest.mark.parametrize(
    ("turn", "facts"),
    [
        ("Note: I live in Oslo.", [("ent:chat", "User lives in Oslo")]),
        ("Reminder: I work at Google.", [("ent:chat", "User works at Google")]),
        ("PS: I have a cat.", [("ent:chat", "User has a cat")]),
        ("I moved. Note: I live in Oslo now.", [("ent:chat", "User lives in Oslo")]),
        ("Dr. Smith: I work at Google.", [("ent:dr-smith", "Dr. Smith works at Google")]),
    ],
)
def test_a_label_that_names_nobody_leaves_the_turn_to_the_entity(
    turn: str, facts: list[tuple[str, str]]
) -> None:
    """ "Note:", "Reminder:" name nobody: the first person is the request's entity, as after "Update:";
    a titled name names its speaker."""
    plan = plan_turn(RULES, turn, org_id="o", entity_id="ent:chat", timestamp=T0, now=T0)
    assert [(f.subject, f.text) for f in plan.extraction.facts] == facts


def test_a_speaker_label_typed_decomposed_names_the_speaker() -> None:
    """ "E" + U+0301 "mile: ..." (NFD) is Émile's turn: both facts are Émile's, none the entity's."""
    for turn in (
        "\u00c9mile: I live in Paris and I work at Renault.",
        "E\u0301mile: I live in Paris and I work at Renault.",
    ):
        plan = plan_turn(RULES, turn, org_id="o", entity_id="ent:chat", timestamp=T0, now=T0)
        assert [(f.subject, f.text) for f in plan.extraction.facts] == [
            ("ent:emile", "\u00c9mile lives in Paris"),
            ("ent:emile", "\u00c9mile works at Renault"),
        ]


def test_each_speakers_lines_give_their_facts() -> None:
    """A turn of several speakers' lines: each line's speaker owns its facts; an agent's line gives none."""
    turn = "Caroline: I live in Berlin.\nMelanie: I live in Paris.\nassistant: I live in the cloud.\nuser: I am 25."
    plan = plan_turn(RULES, turn, org_id="o", entity_id="ent:chat", timestamp=T0, now=T0)
    assert [(f.subject, f.text) for f in plan.extraction.facts] == [
        ("ent:caroline", "Caroline lives in Berlin"),
        ("ent:melanie", "Melanie lives in Paris"),
        ("ent:chat", "User is 25 years old"),
    ]
    assert {"ent:berlin", "ent:paris"} <= {e.entity_id for e in plan.extraction.entities}


def test_the_parts_of_one_turn_share_one_extraction_budget() -> None:
    """Each labelled line is a part; the rule extractor's budget is the turn's, not each part's."""
    ticks = iter(range(1_000_000))  # every reading of the clock is one second later
    timed = RuleExtractor(budget_ms=5500, clock=lambda: float(next(ticks)))
    names = ["Ann", "Bob", "Cid", "Dan", "Eve", "Fay", "Gus", "Hal"]
    turn = "\n".join(f"{name}: I live in Rome." for name in names)
    plan = plan_turn(timed, turn, org_id="o", entity_id="ent:chat", timestamp=T0, now=T0)
    assert plan.extraction.truncated
    # the turn's deadline is read once, then each part reads the clock twice (its own start and its
    # first sentence's check): two parts run, the third's check finds the deadline passed
    assert [f.subject for f in plan.extraction.facts] == ["ent:ann", "ent:bob"]
    untimed = plan_turn(
        RuleExtractor(budget_ms=0), turn, org_id="o", entity_id="ent:chat", timestamp=T0, now=T0
    )
    assert not untimed.extraction.truncated and len(untimed.extraction.facts) == len(names)


@pytest.mark.parametrize(
    ("said", "then", "left"),
    [
        ("I have a cat named Tom.", "I no longer have a cat.", []),
        ("I have a cat named Tom. I have a dog.", "I gave away my cat.", ["User has a dog"]),
        ("I drive a Tesla Model 3.", "I no longer own a Tesla.", []),
        ("I like jazz.", "I hate jazz now.", ["User dislikes jazz"]),
        ("I don't eat meat.", "I eat meat now.", ["User eats meat"]),
    ],
)
def test_a_turn_that_reverses_a_fact_ends_it(said: str, then: str, left: list[str]) -> None:
    store = InMemoryStore()
    commit_turn(store, plan_turn(RULES, said, org_id="o", entity_id="ent:u", timestamp=T0, now=T0), now=T0)
    t1 = T0 + timedelta(days=1)
    out = commit_turn(
        store, plan_turn(RULES, then, org_id="o", entity_id="ent:u", timestamp=t1, now=t1), now=t1
    )
    assert out.extracted.upserts[1].action == "SUPERSEDED"
    active = store.list_memories("o", ListQuery(statuses=("active",)))
    assert sorted(m.text for m in active if m.type == "fact") == left


def test_a_negation_names_the_turn_that_said_it() -> None:
    """A negation is never stored: its item in `facts` carries the id its outcome names (the stored
    turn), and is left out when no turn is stored, so every id in `extracted` exists."""
    store = InMemoryStore()
    commit_turn(
        store,
        plan_turn(RULES, "I work at Acme.", org_id="o", entity_id="ent:u", timestamp=T0, now=T0),
        now=T0,
    )
    t1 = T0 + timedelta(days=1)
    out = commit_turn(
        store,
        plan_turn(RULES, "I no longer work at Acme.", org_id="o", entity_id="ent:u", timestamp=t1, now=t1),
        now=t1,
    ).extracted
    (negation,) = out.facts
    turn_id = out.upserts[0].memory_id
    assert negation.memory_id == out.upserts[1].memory_id == turn_id and store.get_memory("o", turn_id or "")
    assert negation.text == "No longer true: User works at Acme" and negation.metadata["negated"]
    silent = commit_turn(
        store,
        plan_turn(RULES, "I no longer work at Acme.", org_id="o", entity_id="ent:u", timestamp=t1, now=t1,
                  store_turn="none"),
        now=t1,
    ).extracted  # fmt: skip
    assert silent.facts == [] and [u.memory_id for u in silent.upserts] == [None]


def test_commit_reports_stored_state_and_metadata() -> None:
    store = InMemoryStore()
    plan = plan_turn(
        RULES,
        "I live in Paris",
        org_id="o",
        entity_id="alice",
        timestamp=T0,
        now=T0,
        store_turn="none",
        metadata={"run_id": "r1"},
    )
    out = commit_turn(store, plan, now=T0)
    (fact,) = out.extracted.facts
    assert fact.entity_id == "alice" and fact.subject == "ent:alice" and fact.metadata["run_id"] == "r1"
    assert [u.action for u in out.extracted.upserts] == ["UPSERTED"]
    again = commit_turn(store, plan, now=T0)
    assert (
        again.extracted.upserts[0].action == "SKIPPED"
        and again.extracted.upserts[0].memory_id == fact.memory_id
    )
    assert again.extracted.facts[0].memory_id == fact.memory_id  # the existing fact, as stored
    assert len(store.list_memories("o", ListQuery())) == 1
    # metadata.run_id is part of the memory space: the same fact in no run is another space's
    elsewhere = commit_turn(
        store,
        plan_turn(
            RULES, "I live in Paris", org_id="o", entity_id="alice", timestamp=T0, now=T0, store_turn="none"
        ),
        now=T0,
    )
    assert elsewhere.extracted.upserts[0].action == "UPSERTED"
    assert len(store.list_memories("o", ListQuery())) == 2


def test_commit_is_all_or_nothing() -> None:
    store = InMemoryStore()
    plan = plan_turn(RULES, "I live in Paris", org_id="o", entity_id="ent:user", timestamp=T0, now=T0)

    def boom(events: object, *, durable: bool = True) -> None:
        raise RuntimeError("log full")

    store.append_events = boom  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        commit_turn(store, plan, now=T0)
    assert store.count_memories("o") == 0


class _Broken:
    model = "broken:1"
    dim = 4

    def embed(self, texts: object) -> object:
        raise RuntimeError("down")


def test_embed_for_write_never_raises_and_the_write_stores_the_vectors() -> None:
    from engine.embed.cache import EmbeddingCache
    from engine.embed.hash import HashEmbedder
    from engine.models import text_hash

    store = InMemoryStore()
    cache = EmbeddingCache(HashEmbedder(), store)
    assert embed_for_write(cache, ["a b", "c"]) is True
    assert store.get_embeddings("hash:256", [text_hash("a b"), text_hash("c")]) == {}  # not before the write
    with store.transaction():
        cache.save(["a b", "c"])
    assert len(store.get_embeddings("hash:256", [text_hash("a b"), text_hash("c")])) == 2
    assert embed_for_write(EmbeddingCache(_Broken(), store), ["a"]) is False  # type: ignore[arg-type]
    assert embed_for_write(None, ["a"]) is True


def test_subject_for_stays_a_valid_subject() -> None:
    for entity_id in ("0" * 300, "ent:" + "x" * 260, "ent:a\n", "ent:a b", "São Paulo"):
        subject = subject_for(entity_id)
        assert msgspec.convert(subject, SubjectId) == subject  # within 256 characters, no spaces
    assert subject_for("ent:ok") == "ent:ok"


def test_tags_go_on_the_turn_and_its_new_facts() -> None:
    store = InMemoryStore()
    tagged = plan_turn(
        RULES, "I live in Paris", org_id="o", entity_id="ent:u", timestamp=T0, now=T0, tags=["home"]
    )
    out = commit_turn(store, tagged, now=T0)
    stored = store.list_memories("o", ListQuery())
    assert sorted((m.type, m.tags) for m in stored) == [("event", ["home"]), ("fact", ["home"])]
    assert out.extracted.facts[0].tags == ["home"]
    again = plan_turn(
        RULES, "I live in Paris", org_id="o", entity_id="ent:u", timestamp=T0, now=T0, tags=["x"]
    )
    # the repeated fact writes nothing: the fact held keeps its tags
    assert commit_turn(store, again, now=T0).extracted.facts[0].tags == ["home"]
